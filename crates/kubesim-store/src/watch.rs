//! A watch on one resource: the retained backlog, then live events.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::broadcast;

use crate::record::Event;

/// Subscribes again from a revision: the history's events after it and a
/// new live receiver; None when the history no longer reaches back that
/// far (or the store is gone).
pub(crate) type Resume = Box<dyn Fn(u64) -> Option<Subscription> + Send + Sync>;

/// The events a watch starts with, and the receiver of the ones to come.
pub(crate) type Subscription = (VecDeque<Arc<Event>>, broadcast::Receiver<Arc<Event>>);

/// Yields events in revision order. A watcher that falls behind its live
/// channel (a burst of writes larger than the channel while it was not
/// polled) catches up from the store's history. Ends (returns `None`) only
/// when the history no longer holds what it missed; the client then
/// resumes from the last revision it saw and gets 410 Gone, as from a
/// compacted etcd.
pub struct WatchStream {
    backlog: VecDeque<Arc<Event>>,
    live: broadcast::Receiver<Arc<Event>>,
    last: u64,
    /// The revision of the starting backlog's last event (the start
    /// revision if it had none).
    backlog_end: u64,
    /// Set once live events were lost; the stream yields nothing more.
    broken: bool,
    resume: Option<Resume>,
}

impl WatchStream {
    pub(crate) fn new(
        backlog: VecDeque<Arc<Event>>,
        live: broadcast::Receiver<Arc<Event>>,
        after: u64,
        resume: Option<Resume>,
    ) -> Self {
        WatchStream {
            backlog_end: backlog.back().map_or(after, |e| e.rev),
            backlog,
            live,
            last: after,
            broken: false,
            resume,
        }
    }

    /// After lost live events: the missed ones from the history and a new
    /// subscription, or the end of the stream. Returns the next event.
    fn catch_up(&mut self) -> Option<Arc<Event>> {
        // Worth seeing when sizing the history, which serves these.
        tracing::debug!(after = self.last, "watch fell behind its channel");
        match self.resume.as_ref().and_then(|r| r(self.last)) {
            Some((backlog, live)) => {
                self.backlog = backlog;
                self.live = live;
                let ev = self.backlog.pop_front()?;
                self.last = ev.rev;
                Some(ev)
            }
            None => {
                self.broken = true;
                None
            }
        }
    }

    /// Events up to this revision were committed before the watch began
    /// (the history after its start revision); later ones came live. A
    /// server counts the first as the watch's initial events.
    pub fn backlog_end(&self) -> u64 {
        self.backlog_end
    }

    /// The revision of the last event yielded (or the start revision).
    pub fn last_rev(&self) -> u64 {
        self.last
    }

    pub async fn next(&mut self) -> Option<Arc<Event>> {
        if let Some(ev) = self.backlog.pop_front() {
            self.last = ev.rev;
            return Some(ev);
        }
        while !self.broken {
            match self.live.recv().await {
                // The subscription may predate the backlog's end: skip repeats.
                Ok(ev) if ev.rev <= self.last => continue,
                Ok(ev) => {
                    self.last = ev.rev;
                    return Some(ev);
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if let Some(ev) = self.catch_up() {
                        return Some(ev);
                    }
                }
                Err(broadcast::error::RecvError::Closed) => self.broken = true,
            }
        }
        None
    }

    /// A non-blocking variant of [`next`](Self::next) for batching writers.
    pub fn try_next(&mut self) -> Option<Arc<Event>> {
        if let Some(ev) = self.backlog.pop_front() {
            self.last = ev.rev;
            return Some(ev);
        }
        while !self.broken {
            match self.live.try_recv() {
                Ok(ev) if ev.rev <= self.last => continue,
                Ok(ev) => {
                    self.last = ev.rev;
                    return Some(ev);
                }
                Err(broadcast::error::TryRecvError::Empty) => return None,
                Err(broadcast::error::TryRecvError::Lagged(_)) => {
                    if let Some(ev) = self.catch_up() {
                        return Some(ev);
                    }
                }
                Err(broadcast::error::TryRecvError::Closed) => self.broken = true,
            }
        }
        None
    }
}
