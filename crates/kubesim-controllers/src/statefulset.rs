use crate::Context;
use std::sync::Arc;
pub struct StatefulSetController;
impl StatefulSetController {
    pub fn new(_c: Arc<Context>) -> Arc<Self> {
        Arc::new(StatefulSetController)
    }
    pub async fn run(self: Arc<Self>) {}
}
