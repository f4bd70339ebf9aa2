//! A watch on one resource: the retained backlog, then live events.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::broadcast;

use crate::record::Event;

/// Yields events in revision order. Ends (returns `None`) when the store
/// drops the watcher for falling too far behind; the client then resumes
/// from the last revision it saw, exactly as after a server-side timeout.
pub struct WatchStream {
    backlog: VecDeque<Arc<Event>>,
    live: broadcast::Receiver<Arc<Event>>,
    last: u64,
    /// Set once live events were lost; the stream yields nothing more.
    broken: bool,
}

impl WatchStream {
    pub(crate) fn new(
        backlog: VecDeque<Arc<Event>>,
        live: broadcast::Receiver<Arc<Event>>,
        after: u64,
    ) -> Self {
        WatchStream {
            backlog,
            live,
            last: after,
            broken: false,
        }
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
                Err(_) => self.broken = true,
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
                Err(_) => self.broken = true,
            }
        }
        None
    }
}
