//! What tattler does to an object, pure: the one iterative pass that checks
//! it is JSON, finds its metadata and redacts secrets (`scrub`, the entry
//! points; `edits`, what it takes and gives; `walk`, the pass; `lexer`, its tokens;
//! `annotation_copies`, the annotations
//! holding a copy of the object; `reuse`, the memory the walks reuse) as the redaction policy says (`policy`,
//! one short file), and the consumer's shaping options, event filter and
//! transform (`shape`). No I/O, no clock, no log (`.ci/pure.sh` checks).

mod annotation_copies;
pub(crate) mod edits;
mod lexer;
pub(crate) mod policy;
pub(crate) mod reuse;
pub(crate) mod scrub;
pub(crate) mod shape;
mod string_specials;
mod walk;

#[cfg(test)]
mod corpus;
#[cfg(test)]
mod reference;
