//! The seeded data a shape writes into memory and verifies against (byte
//! streams, token permutations, table indices), made once per process and
//! shape instead of once per rep.
//!
//! Verifying a rep of a branch or stream shape regenerated up to 8 MiB of
//! seeded data on the host (about 9 ms for the token stream), longer than
//! the 2 ms timed call itself: most of such a shape's budget went to
//! verification. The data are pure functions of their source and length,
//! so the last one made is kept and its prefixes reused. Only one is kept
//! (a working set can be 1 GiB): shapes run one after another, and `init`
//! and every rep's `verify` of a shape ask for the same source.

use std::cell::RefCell;
use std::ops::Deref;
use std::rc::Rc;

/// A recipe for bytes whose every prefix is the same recipe at a shorter
/// length (so a longer copy serves a shorter request).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// [`super::Stream`]'s bytes from this seed.
    Stream(u64),
    /// [`permutation_tokens`] from this seed.
    Tokens(u64),
    /// The first group of `Tokens(seed)`, repeated: a period-8 stream.
    PeriodicTokens(u64),
    /// `Stream(seed)` bytes modulo `n`: indices into an `n`-entry table.
    Indices { seed: u64, n: u8 },
    /// Zeros (a stream that always picks the first entry).
    Zeros,
}

/// Groups of eight tokens, each group a permutation of 0..7.
pub fn permutation_tokens(len: usize, seed: u64) -> Vec<u8> {
    let mut s = super::Stream::new(seed);
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let mut group: [u8; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
        for i in (1..8).rev() {
            let j = (s.next_u64() % (i as u64 + 1)) as usize;
            group.swap(i, j);
        }
        out.extend_from_slice(&group);
    }
    out.truncate(len);
    out
}

impl Source {
    fn make(self, len: usize) -> Vec<u8> {
        match self {
            Source::Stream(seed) => super::Stream::new(seed).bytes(len),
            Source::Tokens(seed) => permutation_tokens(len, seed),
            Source::PeriodicTokens(seed) => {
                let group = permutation_tokens(8, seed);
                group.iter().copied().cycle().take(len).collect()
            }
            Source::Indices { seed, n } => {
                let mut v = super::Stream::new(seed).bytes(len);
                v.iter_mut().for_each(|b| *b %= n);
                v
            }
            Source::Zeros => vec![0; len],
        }
    }
}

/// `len` bytes of a [`Source`], shared with the kept copy.
pub struct Data {
    all: Rc<Vec<u8>>,
    len: usize,
}

impl Deref for Data {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.all[..self.len]
    }
}

thread_local! {
    static LAST: RefCell<Option<(Source, Rc<Vec<u8>>)>> = const { RefCell::new(None) };
}

/// The first `len` bytes of `source`, made only if the kept copy is of
/// another source or shorter.
pub fn bytes(source: Source, len: usize) -> Data {
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        let all = match &*last {
            Some((s, all)) if *s == source && all.len() >= len => all.clone(),
            _ => {
                let all = Rc::new(source.make(len));
                *last = Some((source, all.clone()));
                all
            }
        };
        Data { all, len }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the memo hands out is exactly what the recipe makes, whatever
    /// was asked before: a prefix of a longer copy, a longer request after
    /// a shorter one, another source in between.
    #[test]
    fn every_request_equals_a_fresh_make() {
        let sources = [
            Source::Stream(7),
            Source::Tokens(7),
            Source::PeriodicTokens(7),
            Source::Indices { seed: 7, n: 5 },
            Source::Zeros,
        ];
        for source in sources {
            for len in [4096, 100, 4099, 8192, 1, 0, 8192] {
                assert_eq!(
                    &bytes(source, len)[..],
                    &source.make(len)[..],
                    "{source:?} {len}"
                );
            }
            // Another source in between.
            assert_eq!(
                &bytes(Source::Stream(9), 64)[..],
                &Source::Stream(9).make(64)[..]
            );
            assert_eq!(&bytes(source, 300)[..], &source.make(300)[..], "{source:?}");
        }
        assert!(Source::Indices { seed: 7, n: 5 }
            .make(1000)
            .iter()
            .all(|&b| b < 5));
        assert_eq!(
            Source::PeriodicTokens(7).make(24)[..8],
            Source::Tokens(7).make(8)[..]
        );
        assert_eq!(
            Source::PeriodicTokens(7).make(24)[16..],
            Source::Tokens(7).make(8)[..]
        );
    }

    /// A shorter request shares the kept copy; a longer one makes anew.
    #[test]
    fn a_prefix_is_not_made_again() {
        let long = bytes(Source::Tokens(3), 1000);
        let short = bytes(Source::Tokens(3), 10);
        assert!(Rc::ptr_eq(&long.all, &short.all));
        let longer = bytes(Source::Tokens(3), 2000);
        assert!(!Rc::ptr_eq(&long.all, &longer.all));
    }
}
