//! The registries of live handles: every reader and entry pointer C passes in
//! is looked up here before anything is done with it, so a closed, freed or
//! foreign pointer is refused (`TATTLER_ERR_INVALID_HANDLE`, or a getter's
//! default) instead of followed.
//!
//! The pointer C holds is the address of a shell, a one-byte allocation of
//! the registry's own (the C type, `tattler_reader` or `tattler_entry`,
//! with nothing in it), never the object's: the registry maps the address
//! to the object, and nothing turns an address back into a reference, so
//! this module needs no `unsafe`. Shells are recycled first in, first out,
//! and only once `quarantine` others are spare: a stale pointer names
//! nothing for at least that many later frees. Without that the allocator
//! would hand the freed address out again at once, and `free(e); e2 =
//! next(); free(e)` would free `e2`.

use std::collections::{BTreeMap, VecDeque};

/// The live handles of one C type `S`, each mapped to its object `T`.
///
/// A `BTreeMap`, not a `HashMap`: a consumer holds a few entries at a time,
/// where a few comparisons beat hashing, and hashbrown's table is known to
/// valgrind only by a pointer into its middle, which `--leak-check=full`
/// reports as possibly lost for as long as the process runs.
pub(crate) struct Registry<S, T> {
    live: BTreeMap<usize, Live<S, T>>,
    /// Shells no handle uses, the longest unused first.
    spare: VecDeque<Box<S>>,
    /// How many spare shells wait before one is used again.
    quarantine: usize,
}

struct Live<S, T> {
    /// Owned here so that its address stays taken while the handle lives.
    shell: Box<S>,
    value: T,
}

impl<S: Default, T> Registry<S, T> {
    pub(crate) const fn new(quarantine: usize) -> Registry<S, T> {
        Registry {
            live: BTreeMap::new(),
            spare: VecDeque::new(),
            quarantine,
        }
    }

    /// Registers `value`; the pointer is its handle, for C.
    pub(crate) fn insert(&mut self, value: T) -> *mut S {
        let reuse = self.spare.len() > self.quarantine;
        let mut shell = reuse
            .then(|| self.spare.pop_front())
            .flatten()
            .unwrap_or_default();
        let handle: *mut S = &mut *shell;
        self.live.insert(handle as usize, Live { shell, value });
        handle
    }

    /// The object of a live handle; `None` for any other pointer (never
    /// dereferenced: it is only a number here).
    pub(crate) fn get(&self, handle: *const S) -> Option<&T> {
        self.live.get(&(handle as usize)).map(|l| &l.value)
    }

    /// The object of a live handle, to change; `None` for any other pointer.
    pub(crate) fn get_mut(&mut self, handle: *const S) -> Option<&mut T> {
        self.live.get_mut(&(handle as usize)).map(|l| &mut l.value)
    }

    /// Unregisters a live handle and gives its object back; `None` for any
    /// other pointer, which is left alone.
    pub(crate) fn remove(&mut self, handle: *const S) -> Option<T> {
        let live = self.live.remove(&(handle as usize))?;
        self.spare.push_back(live.shell);
        Some(live.value)
    }

    /// How many handles are live.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.live.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Shell(#[allow(dead_code)] u8);

    #[test]
    fn only_live_handles_are_found_and_each_is_removed_once() {
        let mut reg: Registry<Shell, String> = Registry::new(2);
        let a = reg.insert("a".into());
        let b = reg.insert("b".into());
        assert_ne!(a, b);
        assert_eq!(reg.get(a).map(String::as_str), Some("a"));
        assert_eq!(reg.remove(a).as_deref(), Some("a"));
        assert_eq!(reg.get(a), None);
        assert_eq!(reg.remove(a), None, "a second remove finds nothing");
        let foreign = Box::new(Shell(0));
        assert_eq!(reg.get(&*foreign), None);
        assert_eq!(reg.remove(&*foreign), None);
        assert_eq!(reg.get(std::ptr::null()), None);
        assert_eq!(reg.len(), 1);
        assert_eq!(reg.get(b).map(String::as_str), Some("b"));
    }

    #[test]
    fn a_freed_handle_is_reused_only_after_the_quarantine() {
        let mut reg: Registry<Shell, u32> = Registry::new(3);
        let first = reg.insert(0);
        reg.remove(first);
        // Insert and remove: three more shells join the spare ones before
        // `first` comes round again.
        let mut seen = Vec::new();
        for i in 1..=4 {
            let h = reg.insert(i);
            seen.push(h);
            reg.remove(h);
        }
        assert!(!seen[..3].contains(&first), "reused within the quarantine");
        assert_eq!(seen[3], first, "then first in, first out");
        assert_eq!(reg.spare.len(), 4);
    }
}
