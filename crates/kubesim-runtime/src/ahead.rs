//! Work done ahead on a thread of its own, for results wanted later.
//!
//! A simulation runs every component on one thread, and the machine has
//! another core. Some of that thread's work is a pure function of data at
//! hand well before its result is wanted: decoding an object just
//! committed, which the next write of it will read; rendering a patch
//! that a stage will send when its delay is over. [`Ahead::spawn`] queues
//! such a function and gives a [`Promise`]; [`Promise::get`] returns what
//! the helper thread made, waits if the thread is making it, or makes it
//! on the spot if the thread has not begun. The result is the function's
//! either way, so nothing a run computes depends on which thread was
//! faster: only how long it takes does.
//!
//! The newest work is done first: it is the likeliest to be wanted soon,
//! and work the thread falls far behind on is left to whoever wants it.
//! The thread sleeps as soon as it has nothing to do. Looking for work for
//! a while first saved the system call that wakes it, but kept the second
//! core busy for the whole run: on the synthetic family, sleeping at once
//! costs 0-7 % of wall time (3 % on the median member) and saves a quarter
//! of the run's CPU time (docs/decisions/work-ahead.md).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, MutexGuard};

/// Jobs queued at most; beyond, the oldest are dropped unstarted (their
/// promises then make their results when asked).
const QUEUED: usize = 8192;
/// Times a caller looks for the result the thread is making before it
/// sleeps.
const WAIT_SPINS: usize = 10_000;

/// The helper thread; clones share it, and it ends when the last goes.
#[derive(Clone)]
pub struct Ahead {
    handle: Arc<Handle>,
}

/// Ends the thread when dropped.
struct Handle {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    work: Condvar,
}

#[derive(Default)]
struct State {
    /// Newest last.
    jobs: Vec<Arc<dyn Job>>,
    /// The thread sleeps on `work`.
    asleep: bool,
    closed: bool,
}

trait Job: Send + Sync {
    fn run(&self);
}

/// The result of a function given to [`Ahead::spawn`].
pub struct Promise<T> {
    cell: Arc<Cell<T>>,
}

struct Cell<T> {
    state: Mutex<Phase<T>>,
    /// Set when the helper has made the result (or found it unwanted).
    finished: AtomicBool,
    done: Condvar,
}

impl<T> Cell<T> {
    /// Waits while the helper makes the result: first by looking (it
    /// takes microseconds, and waking a sleeping thread takes longer),
    /// then asleep.
    fn wait(&self, st: &mut MutexGuard<'_, Phase<T>>) {
        MutexGuard::unlocked(st, || {
            for _ in 0..WAIT_SPINS {
                if self.finished.load(Ordering::Acquire) {
                    break;
                }
                std::hint::spin_loop();
            }
        });
        if matches!(**st, Phase::Running) {
            self.done.wait(st);
        }
    }
}

type Work<T> = Box<dyn FnOnce() -> T + Send>;

enum Phase<T> {
    Queued(Work<T>),
    Running,
    Done(T),
    /// Taken by its promise (or the promise is gone).
    Taken,
}

impl Ahead {
    /// Starts the helper thread.
    pub fn start() -> Ahead {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            work: Condvar::new(),
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("kubesim-ahead".into())
            .spawn(move || s.run())
            .expect("spawn the helper thread");
        Ahead {
            handle: Arc::new(Handle { shared }),
        }
    }

    /// Queues `f`; its result is the promise's.
    pub fn spawn<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Promise<T> {
        let cell = Arc::new(Cell {
            state: Mutex::new(Phase::Queued(Box::new(f))),
            finished: AtomicBool::new(false),
            done: Condvar::new(),
        });
        self.queue(cell.clone());
        Promise { cell }
    }

    /// Drops `v` on the helper thread: freeing a large tree costs time
    /// the caller's thread has better use for.
    pub fn drop_later<T: Send + 'static>(&self, v: T) {
        self.queue(Arc::new(Dropping(Mutex::new(Some(v)))));
    }

    fn queue(&self, job: Arc<dyn Job>) {
        let shared = &self.handle.shared;
        let mut st = shared.state.lock();
        // Dropped outside the lock: a job may hold a large value.
        let old: Vec<_> = if st.jobs.len() >= QUEUED {
            let stale = st.jobs.len() - QUEUED / 2;
            st.jobs.drain(..stale).collect()
        } else {
            Vec::new()
        };
        st.jobs.push(job);
        let asleep = st.asleep;
        drop(st);
        drop(old);
        if asleep {
            shared.work.notify_one();
        }
    }
}

impl std::fmt::Debug for Ahead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ahead")
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.state.lock().closed = true;
        self.shared.work.notify_one();
    }
}

impl Shared {
    fn run(&self) {
        loop {
            let job = {
                let mut st = self.state.lock();
                loop {
                    if st.closed {
                        return;
                    }
                    match st.jobs.pop() {
                        Some(job) => break job,
                        None => st = self.idle(st),
                    }
                }
            };
            job.run();
        }
    }

    /// Sleeps until there is work (or the thread is to end).
    fn idle<'a>(&'a self, mut st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        while st.jobs.is_empty() && !st.closed {
            st.asleep = true;
            self.work.wait(&mut st);
            st.asleep = false;
        }
        st
    }
}

impl<T: Send> Job for Cell<T> {
    fn run(&self) {
        let f = {
            let mut st = self.state.lock();
            match std::mem::replace(&mut *st, Phase::Running) {
                Phase::Queued(f) => f,
                other => {
                    *st = other;
                    return;
                }
            }
        };
        let v = f();
        let mut st = self.state.lock();
        if matches!(*st, Phase::Running) {
            *st = Phase::Done(v);
            self.finished.store(true, Ordering::Release);
            self.done.notify_all();
        } else {
            self.finished.store(true, Ordering::Release);
        }
    }
}

struct Dropping<T>(Mutex<Option<T>>);

impl<T: Send> Job for Dropping<T> {
    fn run(&self) {
        let v = self.0.lock().take();
        drop(v);
    }
}

impl<T> Promise<T> {
    /// The result: the helper's if it has made it (waiting while it makes
    /// it), else made now on the caller's thread.
    pub fn get(self) -> T {
        let mut st = self.cell.state.lock();
        loop {
            match std::mem::replace(&mut *st, Phase::Taken) {
                Phase::Done(v) => return v,
                Phase::Queued(f) => {
                    drop(st);
                    return f();
                }
                Phase::Running => {
                    *st = Phase::Running;
                    self.cell.wait(&mut st);
                }
                Phase::Taken => unreachable!("a promise is taken once"),
            }
        }
    }
}

impl<T> Promise<T> {
    /// The result if the helper has made it or is making it (waiting for
    /// it then); None if it has not begun, which then never happens.
    pub fn try_get(self) -> Option<T> {
        let mut st = self.cell.state.lock();
        loop {
            match std::mem::replace(&mut *st, Phase::Taken) {
                Phase::Done(v) => return Some(v),
                Phase::Running => {
                    *st = Phase::Running;
                    self.cell.wait(&mut st);
                }
                Phase::Queued(f) => {
                    drop(st);
                    drop(f);
                    return None;
                }
                Phase::Taken => return None,
            }
        }
    }
}

impl<T> Drop for Promise<T> {
    fn drop(&mut self) {
        // Unstarted work is not done for nobody; a result being made is
        // dropped by the helper when it is done.
        let mut st = self.cell.state.lock();
        if !matches!(*st, Phase::Running) {
            let old = std::mem::replace(&mut *st, Phase::Taken);
            drop(st);
            drop(old);
        } else {
            *st = Phase::Taken;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_promise_gives_its_function_result_whoever_made_it() {
        let ahead = Ahead::start();
        let promises: Vec<_> = (0..200u64).map(|i| ahead.spawn(move || i * i)).collect();
        for (i, p) in promises.into_iter().enumerate() {
            assert_eq!(p.get(), (i * i) as u64);
        }
    }

    #[test]
    fn try_get_gives_only_what_the_thread_made() {
        let ahead = Ahead::start();
        let promises: Vec<_> = (0..200u64).map(|i| ahead.spawn(move || i + 7)).collect();
        for (i, p) in promises.into_iter().enumerate() {
            if let Some(v) = p.try_get() {
                assert_eq!(v, i as u64 + 7);
            }
        }
    }

    #[test]
    fn values_handed_over_are_dropped_by_the_thread() {
        let ahead = Ahead::start();
        let value = Arc::new(5);
        ahead.drop_later(value.clone());
        // An unstarted promise dropped takes its function's captures along.
        let unstarted = ahead.spawn({
            let v = value.clone();
            move || *v
        });
        drop(unstarted);
        // Each round trip lets the thread reach older work.
        while Arc::strong_count(&value) > 1 {
            ahead.spawn(|| ()).get();
        }
        assert_eq!(Arc::strong_count(&value), 1);
    }

    #[test]
    fn work_queued_beyond_the_bound_is_made_when_asked() {
        let ahead = Ahead::start();
        let promises: Vec<_> = (0..QUEUED as u64 * 2)
            .map(|i| ahead.spawn(move || i + 1))
            .collect();
        let sum: u64 = promises.into_iter().map(Promise::get).sum();
        let n = QUEUED as u64 * 2;
        assert_eq!(sum, n * (n + 1) / 2);
    }
}
