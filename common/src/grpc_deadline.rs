//! The deadline of every RPC a Chataigne gRPC server answers: the caller's
//! `grpc-timeout` or the server's cap (`grpc_server.max_request_ms`),
//! whichever is sooner, counted from the request's arrival.
//!
//! tonic enforces a caller's `grpc-timeout` itself, outside every layer a
//! server declares, and answers CANCELLED without details when its timer
//! wins. [`DeadlineLayer`] is the outermost layer of the declared stack
//! (`grpc_server::builder`): it hands the deadline to the service as a
//! request extension ([`CallDeadline`]), so the service stops its own work
//! just before it and answers DEADLINE_EXCEEDED with the code of the tool's
//! effect (`MCP_TOOL_TIMEOUT` for a read, `MCP_OUTCOME_UNKNOWN` for a write
//! that may have happened), and it answers DEADLINE_EXCEEDED itself, a tick
//! of the timer ahead of tonic's, for a call not answered by then (its
//! request still arriving, or the deadline too short for the service's own
//! answer): `MCP_TOOL_TIMEOUT` when its work had not started or only reads,
//! `MCP_OUTCOME_UNKNOWN` when it may write (the service records which in
//! [`CallEffect`]). tonic polls the call before its own timer, so its
//! CANCELLED is never the answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;
use tower::{BoxError, Layer, Service};

use crate::ErrorCode;

/// How far ahead of tonic's own timer (started just before this layer's)
/// the deadline is answered: more than one tick of the timer wheel.
const AHEAD_OF_TONIC: Duration = Duration::from_millis(2);

/// What the service's work may do, told to the layer once it starts it, so
/// that an answer the layer has to give itself says what may have happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The work only reads.
    Reads,
    /// The work may change something.
    MayWrite,
}

/// Where the service records, as a request extension, that its work has
/// started and what it may do (see [`Effect`]).
#[derive(Debug, Clone, Default)]
pub struct CallEffect(Arc<AtomicU8>);

const NOT_STARTED: u8 = 0;
const READS: u8 = 1;
const MAY_WRITE: u8 = 2;

impl CallEffect {
    /// The recorder of a tonic request, when it came through [`DeadlineLayer`].
    pub fn of<T>(request: &tonic::Request<T>) -> Option<CallEffect> {
        request.extensions().get::<CallEffect>().cloned()
    }

    /// Records that the work starts, with what it may do.
    pub fn started(&self, effect: Effect) {
        let state = match effect {
            Effect::Reads => READS,
            Effect::MayWrite => MAY_WRITE,
        };
        self.0.store(state, Ordering::Release);
    }

    fn state(&self) -> u8 {
        self.0.load(Ordering::Acquire)
    }
}

/// The instant by which the RPC must be answered, as a request extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallDeadline(pub Instant);

impl CallDeadline {
    /// The deadline of a tonic request, when it came through [`DeadlineLayer`].
    pub fn of<T>(request: &tonic::Request<T>) -> Option<Instant> {
        request
            .extensions()
            .get::<CallDeadline>()
            .map(|deadline| deadline.0)
    }
}

/// Parses a `grpc-timeout` value: up to 8 digits and a unit (H, M, S, m, u, n).
pub fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    let digits = value.get(..value.len().checked_sub(1)?)?;
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let amount: u64 = digits.parse().ok()?;
    Some(match value.as_bytes().last()? {
        b'H' => Duration::from_secs(amount * 3600),
        b'M' => Duration::from_secs(amount * 60),
        b'S' => Duration::from_secs(amount),
        b'm' => Duration::from_millis(amount),
        b'u' => Duration::from_micros(amount),
        b'n' => Duration::from_nanos(amount),
        _ => return None,
    })
}

/// The caller's `grpc-timeout` of an HTTP request, when well-formed.
pub fn caller_timeout<B>(request: &http::Request<B>) -> Option<Duration> {
    request
        .headers()
        .get("grpc-timeout")
        .and_then(|value| value.to_str().ok())
        .and_then(parse_grpc_timeout)
}

/// The layer's own answer at the deadline, by what the work may have done:
/// nothing (not started: safe to retry), a read, or possibly a change.
fn expired(effect: &CallEffect) -> BoxError {
    let (code, message) = match effect.state() {
        NOT_STARTED => (
            ErrorCode::ToolTimeout,
            "The call's deadline passed before its work could start; nothing was done.",
        ),
        MAY_WRITE => (
            ErrorCode::OutcomeUnknown,
            "The deadline passed before the change finished and it may have taken effect; \
             read the current state before retrying.",
        ),
        _ => (
            ErrorCode::ToolTimeout,
            "The deadline passed before the read finished.",
        ),
    };
    Box::new(code.to_status(message, None, &[], &[]))
}

/// See the module documentation; `cap` is the server's longest RPC.
#[derive(Debug, Clone, Copy)]
pub struct DeadlineLayer {
    pub cap: Duration,
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = Deadlined<S>;

    fn layer(&self, inner: S) -> Deadlined<S> {
        Deadlined {
            inner,
            cap: self.cap,
        }
    }
}

/// See [`DeadlineLayer`].
#[derive(Debug, Clone)]
pub struct Deadlined<S> {
    inner: S,
    cap: Duration,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, R> Service<http::Request<B>> for Deadlined<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
{
    type Response = http::Response<R>;
    type Error = BoxError;
    type Future = BoxFuture<Result<http::Response<R>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let bound = caller_timeout(&request).map_or(self.cap, |caller| caller.min(self.cap));
        let deadline = Instant::now() + bound.saturating_sub(AHEAD_OF_TONIC);
        request.extensions_mut().insert(CallDeadline(deadline));
        let effect = CallEffect::default();
        request.extensions_mut().insert(effect.clone());
        let answer = self.inner.call(request);
        Box::pin(async move {
            // The call is polled first: once its own work has started, its
            // answer (stopped just before the deadline) comes back here.
            match tokio::time::timeout_at(deadline, answer).await {
                Ok(answered) => answered.map_err(Into::into),
                Err(_) => Err(expired(&effect)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::decode_status;
    use std::convert::Infallible;
    use tower::ServiceExt;

    #[test]
    fn grpc_timeouts_parse() {
        assert_eq!(parse_grpc_timeout("20000m"), Some(Duration::from_secs(20)));
        assert_eq!(parse_grpc_timeout("15S"), Some(Duration::from_secs(15)));
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_grpc_timeout("100u"), Some(Duration::from_micros(100)));
        for bad in ["", "m", "123456789m", "12x", "-1S", "1.5S"] {
            assert_eq!(parse_grpc_timeout(bad), None, "{bad}");
        }
    }

    /// Answers after `work`, with the deadline it was handed in a header.
    #[derive(Clone)]
    struct Work(Duration);

    impl Service<http::Request<()>> for Work {
        type Response = http::Response<Option<Instant>>;
        type Error = Infallible;
        type Future = BoxFuture<Result<http::Response<Option<Instant>>, Infallible>>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: http::Request<()>) -> Self::Future {
            let handed = request.extensions().get::<CallDeadline>().map(|d| d.0);
            let work = self.0;
            Box::pin(async move {
                tokio::time::sleep(work).await;
                Ok(http::Response::new(handed))
            })
        }
    }

    fn request(timeout: Option<&str>) -> http::Request<()> {
        let mut builder = http::Request::builder().uri("/a.A/One");
        if let Some(timeout) = timeout {
            builder = builder.header("grpc-timeout", timeout);
        }
        builder.body(()).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn the_sooner_of_the_callers_timeout_and_the_cap_is_handed_to_the_service() {
        let layer = DeadlineLayer {
            cap: Duration::from_secs(60),
        };
        let quick = layer.layer(Work(Duration::from_millis(1)));
        let started = Instant::now();
        let answer = quick.clone().oneshot(request(Some("500m"))).await.unwrap();
        assert_eq!(
            *answer.body(),
            Some(started + Duration::from_millis(500) - AHEAD_OF_TONIC)
        );
        let started = Instant::now();
        let answer = quick.clone().oneshot(request(None)).await.unwrap();
        assert_eq!(
            *answer.body(),
            Some(started + Duration::from_secs(60) - AHEAD_OF_TONIC),
            "without a grpc-timeout the cap"
        );
        let started = Instant::now();
        let answer = quick.oneshot(request(Some("2H"))).await.unwrap();
        assert_eq!(
            *answer.body(),
            Some(started + Duration::from_secs(60) - AHEAD_OF_TONIC),
            "the cap bounds a longer grpc-timeout"
        );
    }

    /// Starts its work as one that may write, then never answers.
    #[derive(Clone)]
    struct Writing;

    impl Service<http::Request<()>> for Writing {
        type Response = http::Response<()>;
        type Error = Infallible;
        type Future = BoxFuture<Result<http::Response<()>, Infallible>>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: http::Request<()>) -> Self::Future {
            if let Some(effect) = request.extensions().get::<CallEffect>() {
                effect.started(Effect::MayWrite);
            }
            Box::pin(std::future::pending())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_started_and_cut_by_the_deadline_is_outcome_unknown() {
        let layer = DeadlineLayer {
            cap: Duration::from_secs(60),
        };
        let refused = layer
            .layer(Writing)
            .oneshot(request(Some("20m")))
            .await
            .unwrap_err();
        let status = refused.downcast::<tonic::Status>().expect("a status");
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded);
        assert_eq!(decode_status(&status).code, ErrorCode::OutcomeUnknown);
    }

    #[tokio::test(start_paused = true)]
    async fn work_not_done_by_the_deadline_is_deadline_exceeded_with_details_ahead_of_tonic() {
        let layer = DeadlineLayer {
            cap: Duration::from_secs(60),
        };
        for timeout in ["1m", "2m", "5m", "50m"] {
            let slow = layer.layer(Work(Duration::from_secs(5)));
            let started = Instant::now();
            let refused = slow.oneshot(request(Some(timeout))).await.unwrap_err();
            let caller = parse_grpc_timeout(timeout).unwrap();
            assert!(
                started.elapsed() < caller,
                "{timeout}: ahead of tonic's timer"
            );
            let status = refused.downcast::<tonic::Status>().expect("a status");
            assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{timeout}");
            let decoded = decode_status(&status);
            assert_eq!(decoded.code, ErrorCode::ToolTimeout);
            assert!(
                !status.details().is_empty(),
                "{timeout}: with the ErrorInfo of the code table"
            );
        }
    }
}
