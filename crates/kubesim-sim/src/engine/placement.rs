//! Jobs whose run time depends on the hosts they run on
//! ([`crate::workload::work`]): once all of a job's pods run, their hosts
//! decide its run time, which goes into each pod's
//! `kubesim.io/run-duration`; the Stage that ends pods counts it from
//! that instant, the instant the job started.

use std::sync::Arc;

use kubesim_core::patch::PatchType;
use kubesim_runtime::{Api, Informer, ResourceRef, WriteOptions};
use serde_json::{json, Value};

use super::pods::{pod_names, run_millis, RUN_DURATION};
use super::recorder::Recorder;
use super::SimJob;
use crate::routes::Platform;

/// What the task needs: the jobs, their pods' names, the platform.
pub struct Placement {
    pub jobs: Arc<[Arc<SimJob>]>,
    pub names: Arc<Vec<String>>,
    pub platform: Arc<Platform>,
}

impl Placement {
    /// Times each job as it starts, until the run ends.
    pub async fn run(self, recorder: Recorder, client: Arc<dyn Api>, pods: Arc<Informer>) {
        let pods_ref = ResourceRef::core("pods");
        loop {
            for i in recorder.placed().await {
                let job = &self.jobs[i];
                let Some(work) = &job.work else { continue };
                let members = pod_names(job, &self.names[i]);
                let nodes: Vec<String> = members
                    .iter()
                    .filter_map(|m| {
                        let pod = pods.cache().get("default", m)?;
                        pod.pointer("/spec/nodeName")
                            .and_then(Value::as_str)
                            .map(String::from)
                    })
                    .collect();
                let hosts: Vec<&str> = nodes.iter().map(String::as_str).collect();
                let time = (hosts.len() == members.len())
                    .then(|| work.time_on(&hosts, &self.platform))
                    .flatten();
                let patch = match time {
                    Some(t) => {
                        recorder.set_run_time(i, t);
                        let run = job.walltime.map_or(t, |w| w.min(t));
                        json!({"metadata": {"annotations": {RUN_DURATION: format!("{}ms", run_millis(run))}}})
                    }
                    // The reader times only jobs the platform can time; a
                    // run given other nodes than its platform's ends such
                    // a job as failed rather than guess.
                    None => {
                        tracing::warn!(job = %job.id, ?hosts, "no run time on these hosts; the job fails");
                        json!({"status": {"phase": "Failed", "reason": "NoRunTime",
                            "message": "the platform gives no run time on these hosts"}})
                    }
                };
                let status = time.is_none().then_some("status");
                for m in &members {
                    if let Err(e) = client
                        .patch_value(
                            &pods_ref,
                            "default",
                            m,
                            PatchType::Merge,
                            patch.clone(),
                            status,
                            &WriteOptions::default(),
                        )
                        .await
                    {
                        tracing::warn!(job = %job.id, pod = %m, error = %e.message, "not timed");
                    }
                }
            }
        }
    }
}
