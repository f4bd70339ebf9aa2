//! Knowing when a simulated instant is over.
//!
//! On a paused single-threaded runtime, time moves on only when every
//! task is waiting; until then, everything that happens is at the same
//! instant. A component that must decide on all of an instant's events
//! together (a batch policy sees a job end and another arrive at the same
//! second, as Batsim sends them in one message) waits for [`Idle`]: the
//! moment the runtime, with nothing left to run, is about to let time
//! move on.
//!
//! The runtime calls [`Idle::about_to_park`] from its
//! `on_thread_park` hook. Waking a task from there puts it in the
//! runtime's run queue, so the runtime runs it instead of parking, and
//! time stays where it is. A timer due at the current instant fires as
//! it is set, so none is pending when the hook runs.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// The waiters for the runtime's next idle moment; clones share them.
#[derive(Clone, Debug, Default)]
pub struct Idle {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// How many idle moments have passed.
    parks: AtomicU64,
    waiting: Mutex<Vec<Waker>>,
}

impl Idle {
    /// For the runtime's `on_thread_park` hook: the runtime has nothing
    /// to run. Wakes every waiter.
    pub fn about_to_park(&self) {
        self.inner.parks.fetch_add(1, Ordering::SeqCst);
        let woken = std::mem::take(&mut *self.inner.waiting.lock().unwrap());
        for w in woken {
            w.wake();
        }
    }

    /// Resolves at the runtime's next idle moment: when every other task
    /// has run out of work at the current instant.
    pub fn next(&self) -> NextIdle {
        NextIdle {
            idle: self.clone(),
            after: self.inner.parks.load(Ordering::SeqCst),
        }
    }
}

/// The future of [`Idle::next`].
pub struct NextIdle {
    idle: Idle,
    after: u64,
}

impl Future for NextIdle {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let inner = &self.idle.inner;
        let mut waiting = inner.waiting.lock().unwrap();
        if inner.parks.load(Ordering::SeqCst) > self.after {
            return Poll::Ready(());
        }
        if !waiting.iter().any(|w| w.will_wake(cx.waker())) {
            waiting.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn runtime(idle: &Idle) -> tokio::runtime::Runtime {
        let hook = idle.clone();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .on_thread_park(move || hook.about_to_park())
            .build()
            .unwrap()
    }

    #[test]
    fn the_waiter_runs_after_the_instants_work_and_before_time_moves() {
        let idle = Idle::default();
        let rt = runtime(&idle);
        let log = rt.block_on(async {
            let log = Arc::new(Mutex::new(Vec::<String>::new()));
            let start = tokio::time::Instant::now();
            let l = log.clone();
            let waiter = tokio::spawn({
                let idle = idle.clone();
                async move {
                    idle.next().await;
                    let at = start.elapsed();
                    l.lock().unwrap().push(format!("idle at {at:?}"));
                }
            });
            // A chain of work at this instant, handed on through channels
            // and yields, and a timer for later.
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
            let l = log.clone();
            let worker = tokio::spawn(async move {
                while let Some(n) = rx.recv().await {
                    tokio::task::yield_now().await;
                    l.lock().unwrap().push(format!("work {n}"));
                }
            });
            for n in 0..3 {
                tx.send(n).unwrap();
                tokio::task::yield_now().await;
            }
            drop(tx);
            let l = log.clone();
            let later = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(5)).await;
                l.lock().unwrap().push("timer".into());
            });
            waiter.await.unwrap();
            worker.await.unwrap();
            later.await.unwrap();
            let out = log.lock().unwrap().clone();
            out
        });
        assert_eq!(log, ["work 0", "work 1", "work 2", "idle at 0ns", "timer"]);
    }
}
