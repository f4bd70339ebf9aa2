use crate::Context;
use std::sync::Arc;
pub struct DaemonSetController;
impl DaemonSetController {
    pub fn new(_c: Arc<Context>) -> Arc<Self> {
        Arc::new(DaemonSetController)
    }
    pub async fn run(self: Arc<Self>) {}
}
