//! A Raft snapshot's data: a file that an export thread may still be writing. Reads, writes
//! and seeks wait until the file is whole, so a group's state machine hands a snapshot out
//! as soon as the store's view of it is fixed and goes on applying while it is written.

use super::stream_pace::StreamPace;
use std::future::Future;
use std::io::{self, SeekFrom};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;

/// The file a snapshot's export writes, sent once it is whole (read from its start).
pub type Exported = oneshot::Sender<io::Result<std::fs::File>>;

/// A snapshot's data file (Raft's `SnapshotData` for every group).
pub struct SnapshotFile {
    state: State,
    /// A seek asked for while the file was not yet whole.
    seek: Option<SeekFrom>,
    /// The pace its reads keep (a snapshot being sent), and the wait before the next read.
    pace: Option<Arc<StreamPace>>,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
}

enum State {
    Pending(oneshot::Receiver<io::Result<std::fs::File>>),
    Ready(tokio::fs::File),
    Failed(io::ErrorKind, String),
}

impl SnapshotFile {
    /// A file that is whole already.
    pub fn ready(file: std::fs::File) -> Self {
        SnapshotFile {
            state: State::Ready(tokio::fs::File::from_std(file)),
            seek: None,
            pace: None,
            wait: None,
        }
    }

    /// A file an export is writing: it becomes readable once the export sends it on the
    /// returned sender (or fails with what the export failed with).
    pub fn pending() -> (Self, Exported) {
        let (tx, rx) = oneshot::channel();
        let file = SnapshotFile {
            state: State::Pending(rx),
            seek: None,
            pace: None,
            wait: None,
        };
        (file, tx)
    }

    /// The same file, read at no more than `pace`'s sending pace (the bytes Raft reads are
    /// the bytes it sends).
    pub fn paced(mut self, pace: Arc<StreamPace>) -> Self {
        self.pace = Some(pace);
        self
    }

    /// The whole file, once written.
    ///
    /// # Errors
    /// What the export failed with.
    pub async fn into_std(mut self) -> io::Result<std::fs::File> {
        std::future::poll_fn(|cx| self.poll_file(cx).map_ok(|_| ())).await?;
        match self.state {
            State::Ready(file) => Ok(file.into_std().await),
            State::Pending(_) | State::Failed(..) => Err(io::Error::other("snapshot not ready")),
        }
    }

    fn poll_file(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&mut tokio::fs::File>> {
        if let State::Pending(rx) = &mut self.state {
            self.state = match ready!(Pin::new(rx).poll(cx)) {
                Ok(Ok(file)) => State::Ready(tokio::fs::File::from_std(file)),
                Ok(Err(e)) => State::Failed(e.kind(), e.to_string()),
                Err(_) => State::Failed(io::ErrorKind::Other, "the export stopped".into()),
            };
        }
        match &mut self.state {
            State::Ready(file) => Poll::Ready(Ok(file)),
            State::Failed(kind, message) => {
                Poll::Ready(Err(io::Error::new(*kind, message.clone())))
            }
            State::Pending(_) => Poll::Pending,
        }
    }
}

impl AsyncRead for SnapshotFile {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(wait) = &mut this.wait {
            ready!(wait.as_mut().poll(cx));
            this.wait = None;
        }
        let before = buf.filled().len();
        let file = ready!(this.poll_file(cx))?;
        ready!(Pin::new(file).poll_read(cx, buf))?;
        let read = (buf.filled().len() - before) as u64;
        if let Some(pace) = &this.pace {
            let wait = pace.send.reserve(read);
            if !wait.is_zero() {
                this.wait = Some(Box::pin(tokio::time::sleep(wait)));
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for SnapshotFile {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let file = ready!(self.get_mut().poll_file(cx))?;
        Pin::new(file).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let file = ready!(self.get_mut().poll_file(cx))?;
        Pin::new(file).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let file = ready!(self.get_mut().poll_file(cx))?;
        Pin::new(file).poll_shutdown(cx)
    }
}

impl AsyncSeek for SnapshotFile {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        let this = self.get_mut();
        match &mut this.state {
            State::Ready(file) => Pin::new(file).start_seek(position),
            State::Pending(_) | State::Failed(..) => {
                this.seek = Some(position);
                Ok(())
            }
        }
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let this = self.get_mut();
        let seek = this.seek.take();
        let file = match this.poll_file(cx) {
            Poll::Ready(file) => file?,
            Poll::Pending => {
                this.seek = seek;
                return Poll::Pending;
            }
        };
        if let Some(position) = seek {
            Pin::new(&mut *file).start_seek(position)?;
        }
        Pin::new(file).poll_complete(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, Write};
    use tokio::io::{AsyncReadExt, AsyncSeekExt};

    #[tokio::test]
    async fn reads_and_seeks_wait_for_the_export() {
        let (mut pending, exported) = SnapshotFile::pending();
        let reader = tokio::spawn(async move {
            let end = pending.seek(SeekFrom::End(0)).await.expect("seek");
            pending.seek(SeekFrom::Start(0)).await.expect("seek");
            let mut out = String::new();
            pending.read_to_string(&mut out).await.expect("read");
            (end, out)
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(
            !reader.is_finished(),
            "nothing is read before the export ends"
        );
        let mut file = tempfile::tempfile().expect("temp file");
        file.write_all(b"whole snapshot").expect("write");
        file.rewind().expect("rewind");
        exported.send(Ok(file)).expect("send");
        let (end, out) = reader.await.expect("reader");
        assert_eq!((end, out.as_str()), (14, "whole snapshot"));
    }

    #[tokio::test]
    async fn a_failed_export_fails_the_reader() {
        let (mut pending, exported) = SnapshotFile::pending();
        exported
            .send(Err(io::Error::new(io::ErrorKind::NotFound, "no table")))
            .expect("send");
        let mut out = Vec::new();
        let e = pending.read_to_end(&mut out).await.expect_err("fails");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let (mut abandoned, exported) = SnapshotFile::pending();
        drop(exported);
        assert!(abandoned.read_to_end(&mut out).await.is_err());
    }
}
