//! Work off the engine's task: compression on tokio's blocking pool (see
//! `rounds::OFFLOAD_COMPRESSION` for when), and the join of a task the engine waits for.

use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinError;

/// Runs `work` on tokio's blocking pool once one of `permits` is free (held until it is
/// done).
pub(super) async fn offload<R: Send + 'static>(
    permits: Arc<Semaphore>,
    work: impl FnOnce() -> R + Send + 'static,
) -> R {
    let Ok(permit) = permits.acquire_owned().await else { unreachable!("never closed") };
    let work = move || {
        let done = work();
        drop(permit);
        done
    };
    joined(tokio::task::spawn_blocking(work).await).await
}

/// A finished task's output; its panic goes on. A task the runtime cancelled (it is shutting
/// down, and drops the waiting task with the engine) leaves the waiting one pending.
pub(super) async fn joined<R>(result: Result<R, JoinError>) -> R {
    match result {
        Ok(done) => done,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => std::future::pending().await,
    }
}
