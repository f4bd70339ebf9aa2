//! Sleep: waits `duration` (a Go duration string) on the clock.

use crate::params::{self, Params};
use crate::report::Summary;

use super::{Ctx, Measurement, MeasurementError};

pub struct Sleep;

#[async_trait::async_trait]
impl Measurement for Sleep {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        _identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        let d = params::duration(p, "duration")?
            .ok_or_else(|| MeasurementError::failed("Sleep: parameter \"duration\" is required"))?;
        ctx.clock.sleep(d).await;
        Ok(Vec::new())
    }
}
