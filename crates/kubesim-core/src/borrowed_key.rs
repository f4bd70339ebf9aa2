//! Ordered maps keyed by tuples of owned strings, searched with borrowed
//! ones: the key's owned form and a tuple of `&str` both implement a
//! `parts()` trait, the owned key borrows as `dyn` that trait, and this
//! macro orders the `dyn` by its parts, as the owned tuple orders itself
//! (which `Borrow` requires).

/// Implements `Eq` and `Ord` for `dyn $parts`, by `parts()`.
#[macro_export]
macro_rules! ordered_by_parts {
    ($parts:ident) => {
        impl PartialEq for dyn $parts + '_ {
            fn eq(&self, other: &Self) -> bool {
                self.parts() == other.parts()
            }
        }

        impl Eq for dyn $parts + '_ {}

        impl PartialOrd for dyn $parts + '_ {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for dyn $parts + '_ {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.parts().cmp(&other.parts())
            }
        }
    };
}
