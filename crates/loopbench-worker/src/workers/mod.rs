//! The worker's end of a worker process: the messages ([`protocol`]), the
//! loop a worker binary runs ([`server`]), the duet barrier both ends map
//! ([`barrier`]) and the heap padding of layout epochs ([`heap`]). The
//! session's end (spawning, building, caching) is the host's.

pub mod barrier;
pub mod heap;
pub mod protocol;
pub mod server;
