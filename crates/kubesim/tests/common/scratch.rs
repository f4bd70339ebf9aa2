//! A test's own directory under the system's temporary one.

// Included on its own (`#[path]`) by tests that need nothing else of
// `common`, each using part of it.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A directory for one test's files, named for the test and the process,
/// emptied of anything an earlier run left there. It is removed when the
/// test drops it, unless the test is failing: a panicking test leaves its
/// files for reading. Hold it for as long as its directory is used:
/// `Command::arg` takes its argument by value, so give it a reference.
pub struct Scratch(PathBuf);

impl Scratch {
    /// The path, not yet created (some commands make their output
    /// directory themselves).
    pub fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("kubesim-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        Scratch(d)
    }

    /// The directory, created.
    pub fn created(name: &str) -> Scratch {
        let s = Scratch::new(name);
        std::fs::create_dir_all(&s.0).unwrap();
        s
    }
}

impl Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<OsStr> for Scratch {
    fn as_ref(&self) -> &OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
