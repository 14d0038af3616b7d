//! Admission per deadline class: reads, writes and analytics each have their
//! own number of calls that may work on the database at once, so that one
//! class — typically slow 30-second analytics — cannot take every pooled
//! connection and starve the others. The sizes come from the configuration
//! (`admission.*`; by default half of the pool for reads, a quarter for
//! writes and the rest for analytics, summing to the pool). A call waits at
//! most `admission.queue_ms` for a slot of its class; past it the class is
//! exhausted and the call is refused with `Overloaded` (`MCP_OVERLOADED`,
//! retryable, with a retry hint) — the service is busy, not unavailable.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::DeadlineClass;
use crate::domain::DomainError;

/// The retry hint of a refusal: long enough for a slot to free up, short
/// enough that a caller retries well within a read's deadline.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The slots of each class, as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassLimits {
    pub reads: u32,
    pub writes: u32,
    pub analytics: u32,
    /// How long a call waits for a slot of its class.
    pub queue: Duration,
}

impl ClassLimits {
    /// The default split of a pool of `pool` connections: half for reads, a
    /// quarter for writes, the rest for analytics (at least one each).
    pub fn split(pool: u32, queue: Duration) -> ClassLimits {
        let reads = (pool / 2).max(1);
        let writes = (pool / 4).max(1);
        let analytics = pool.saturating_sub(reads + writes).max(1);
        ClassLimits {
            reads,
            writes,
            analytics,
            queue,
        }
    }
}

/// The admission gates of the three classes.
#[derive(Debug, Clone)]
pub struct Admission {
    reads: Arc<Semaphore>,
    writes: Arc<Semaphore>,
    analytics: Arc<Semaphore>,
    queue: Duration,
}

/// A slot of one class, given back when dropped.
#[derive(Debug)]
pub struct Admitted(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl Admission {
    pub fn new(limits: ClassLimits) -> Admission {
        let gate =
            |slots: u32| Arc::new(Semaphore::new(usize::try_from(slots.max(1)).unwrap_or(1)));
        Admission {
            reads: gate(limits.reads),
            writes: gate(limits.writes),
            analytics: gate(limits.analytics),
            queue: limits.queue,
        }
    }

    /// No limit of its own (the pool's alone): tests and tools built
    /// without a configuration.
    pub fn unlimited() -> Admission {
        let gate = || Arc::new(Semaphore::new(Semaphore::MAX_PERMITS));
        Admission {
            reads: gate(),
            writes: gate(),
            analytics: gate(),
            queue: Duration::ZERO,
        }
    }

    /// A slot of `class`, waiting at most the queue bound; `Overloaded` when
    /// the class stays exhausted that long.
    pub async fn admit(&self, class: DeadlineClass) -> Result<Admitted, DomainError> {
        let gate = match class {
            DeadlineClass::Read => &self.reads,
            DeadlineClass::Write => &self.writes,
            DeadlineClass::Analytics => &self.analytics,
        };
        if let Ok(permit) = gate.clone().try_acquire_owned() {
            return Ok(Admitted(Some(permit)));
        }
        match tokio::time::timeout(self.queue, gate.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Admitted(Some(permit))),
            // A closed gate never happens (none is ever closed); timing out
            // is the class exhausted.
            Ok(Err(_)) | Err(_) => Err(DomainError::Overloaded {
                retry_after: RETRY_AFTER,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_split_sums_to_the_pool() {
        let limits = ClassLimits::split(16, Duration::ZERO);
        assert_eq!((limits.reads, limits.writes, limits.analytics), (8, 4, 4));
        let limits = ClassLimits::split(10, Duration::ZERO);
        assert_eq!((limits.reads, limits.writes, limits.analytics), (5, 2, 3));
        let tiny = ClassLimits::split(1, Duration::ZERO);
        assert_eq!((tiny.reads, tiny.writes, tiny.analytics), (1, 1, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn an_exhausted_class_refuses_after_its_queue_and_leaves_the_others_alone() {
        let admission = Admission::new(ClassLimits {
            reads: 2,
            writes: 1,
            analytics: 1,
            queue: Duration::from_millis(250),
        });
        let held = admission.admit(DeadlineClass::Analytics).await.unwrap();
        let started = tokio::time::Instant::now();
        let refused = admission.admit(DeadlineClass::Analytics).await;
        assert!(
            matches!(refused, Err(DomainError::Overloaded { retry_after }) if retry_after == RETRY_AFTER),
            "{refused:?}"
        );
        assert_eq!(
            started.elapsed(),
            Duration::from_millis(250),
            "after the queue bound"
        );
        // Reads and writes have slots of their own.
        let reads = (
            admission.admit(DeadlineClass::Read).await.unwrap(),
            admission.admit(DeadlineClass::Read).await.unwrap(),
        );
        let write = admission.admit(DeadlineClass::Write).await.unwrap();
        assert_eq!(started.elapsed(), Duration::from_millis(250), "at once");
        drop((reads, write));
        // A slot freed while a call waits goes to it.
        let waiting = tokio::spawn({
            let admission = admission.clone();
            async move { admission.admit(DeadlineClass::Analytics).await.is_ok() }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(held);
        assert!(waiting.await.unwrap());
    }
}
