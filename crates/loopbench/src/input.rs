//! Reading what a command is given (saved documents, replayed reps): one
//! opener for every reader, so none reads without end.
//!
//! A regular file or a pipe (`<(...)`, a FIFO) is read; a device or a
//! socket is refused (`/dev/zero` would be read until memory ran out), and
//! a pipe that goes on past [`INPUT_CAP`] is stopped there with an error.

use std::io::Read;
use std::path::Path;

/// The most any input may hold, decompressed: far above what loopbench
/// writes (a default session's JSON with every rep is about 25 MB).
pub const INPUT_CAP: u64 = 4 << 30;

/// What a device or socket given as an input is called.
pub const NOT_A_FILE: &str = "a device, not a document file";

/// `path` opened for reading, at most [`INPUT_CAP`] bytes of it.
pub fn open(path: &Path) -> std::io::Result<Capped<std::fs::File>> {
    #[cfg(unix)]
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_char_device() || t.is_block_device() || t.is_socket() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                NOT_A_FILE,
            ));
        }
    }
    Ok(Capped::new(std::fs::File::open(path)?, INPUT_CAP))
}

/// A reader that fails, rather than ending quietly, once its source has
/// given more than `cap` bytes.
pub struct Capped<R> {
    inner: R,
    left: u64,
    cap: u64,
}

impl<R: Read> Capped<R> {
    pub fn new(inner: R, cap: u64) -> Self {
        Capped {
            inner,
            left: cap,
            cap,
        }
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            // At the cap: the end is fine, one more byte is not.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(std::io::Error::other(format!(
                    "more than {} bytes: not a file loopbench wrote",
                    self.cap
                ))),
            };
        }
        let n = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let got = self.inner.read(&mut buf[..n])?;
        self.left -= got as u64;
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_holds_exactly_and_one_byte_more_is_an_error() {
        let mut text = String::new();
        Capped::new(&b"12345"[..], 5)
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "12345");
        let e = Capped::new(&b"123456"[..], 5)
            .read_to_string(&mut String::new())
            .unwrap_err();
        assert!(e.to_string().contains("more than 5 bytes"), "{e}");
    }

    #[test]
    fn a_device_is_refused_before_it_is_read() {
        let e = open(Path::new("/dev/zero")).err().unwrap();
        assert_eq!(e.to_string(), NOT_A_FILE);
    }
}
