//! The memtable keeper: holds a reference to every active memtable so that a flushed memtable
//! is freed here, not under fjall's locks.
//!
//! Freeing a full 64 MiB memtable means freeing its ~400 k skiplist nodes and their keys and
//! values: tens of milliseconds. fjall drops its last reference to a flushed memtable while a
//! memtable rotation garbage-collects old tree versions, holding the journal lock and the
//! tree's version lock, on a worker at the background priority that the writers it blocks
//! preempt. Every write waited for it: a 58-64 ms stall once per rotation (every ~3 s at 100 k
//! writes/s), most of the half-rate write p99. With this thread's reference outliving
//! fjall's, fjall's drop is a counter decrement; the keeper sees that it alone holds the
//! memtable and frees it, with no lock held.
//!
//! It only ever adds references that it releases once fjall is done with a memtable, so it
//! changes when memory is freed (up to one tick later), never what fjall sees.

use std::collections::HashMap;
use std::sync::Arc;

use lsm_tree::Memtable;

/// Active memtables seen, and flushed ones not yet freed.
#[derive(Default)]
pub(crate) struct MemtableKeeper {
    /// By address (a memtable is never moved while referenced).
    kept: HashMap<usize, Arc<Memtable>>,
}

impl MemtableKeeper {
    /// Keeps each memtable of `active` not kept yet, then frees those it alone still holds.
    /// Returns how many it freed.
    pub(crate) fn pass(&mut self, active: impl IntoIterator<Item = Arc<Memtable>>) -> usize {
        for memtable in active {
            let at = Arc::as_ptr(&memtable) as usize;
            self.kept.entry(at).or_insert(memtable);
        }
        let before = self.kept.len();
        self.kept
            .retain(|_, memtable| Arc::strong_count(memtable) > 1);
        before - self.kept.len()
    }

    /// How many memtables are kept.
    #[cfg(test)]
    pub(crate) fn kept(&self) -> usize {
        self.kept.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fjall::AbstractTree;

    #[test]
    fn keeps_each_memtable_until_fjall_is_done_with_it() {
        let (_dir, _db, ks) = crate::tests::scratch_fjall();
        let mut keeper = MemtableKeeper::default();
        ks.insert([1u8], [1u8; 64]).expect("insert");
        assert_eq!(keeper.pass([ks.tree.active_memtable()]), 0);
        assert_eq!(keeper.kept(), 1);
        // The same memtable is kept once.
        assert_eq!(keeper.pass([ks.tree.active_memtable()]), 0);
        assert_eq!(keeper.kept(), 1);
        let first = Arc::as_ptr(&ks.tree.active_memtable()) as usize;

        // A flush seals the memtable: fjall drops it once no tree version refers to it,
        // which it checks when it next rotates a memtable.
        ks.rotate_memtable_and_wait().expect("flush");
        ks.insert([2u8], [2u8; 64]).expect("insert");
        ks.rotate_memtable_and_wait().expect("flush");
        let mut freed = 0;
        for _ in 0..100 {
            freed += keeper.pass([ks.tree.active_memtable()]);
            if !keeper.kept.contains_key(&first) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(freed >= 1, "the first memtable is freed by the keeper");
        assert!(!keeper.kept.contains_key(&first));
        // Data stays readable: the keeper only ever delayed a free.
        assert!(ks.get([1u8]).expect("get").is_some());
        assert!(ks.get([2u8]).expect("get").is_some());
    }
}
