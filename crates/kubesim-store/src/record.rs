//! Stored records and the events that change them.

use std::sync::Arc;

use bytes::Bytes;

use crate::attrs::Attrs;

/// One object at one revision.
#[derive(Debug)]
pub struct Record {
    /// The revision of the write that produced this state.
    pub rev: u64,
    /// Canonical JSON of the object, `metadata.resourceVersion` included.
    pub bytes: Bytes,
    pub attrs: Attrs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// A committed change of one object.
#[derive(Debug)]
pub struct Event {
    pub rev: u64,
    pub kind: EventType,
    pub resource: Arc<str>,
    pub key: Arc<str>,
    /// The new state; for deletions, the final state at the deletion revision.
    pub record: Arc<Record>,
    /// The state before, if the object existed.
    pub prev: Option<Arc<Record>>,
}
