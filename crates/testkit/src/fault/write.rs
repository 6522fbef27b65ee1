//! The IO around [`super::mangle`], shared by every fake's connection loop: serve one request
//! under a fault (sleeping for [`Fault::Delay`]), write the resulting plan.

use std::future::Future;
use std::io;

use gregor_protocol::frame::RequestHeader;
use gregor_protocol::messages::AnyRequest;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::mangle::{after, before, Asked, Before, Handled, Plan, Then};
use super::Fault;

/// Serves one request under `fault` (`None`: no rule matched): unless the fault stops it,
/// waits out its delay, hands the request to `carry_out` (the broker's handler) and turns the
/// correct response into the plan to write.
pub(crate) async fn serve<F, Fut>(
    fault: Option<&Fault>,
    header: &RequestHeader,
    request: AnyRequest,
    carry_out: F,
) -> Plan
where
    F: FnOnce(AnyRequest) -> Fut,
    Fut: Future<Output = Handled>,
{
    match before(fault, header, &request) {
        Before::Instead(plan) => plan,
        Before::CarryOut(delay) => {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let asked = Asked::of(header, &request);
            let handled = carry_out(request).await;
            after(fault, &asked, handled)
        }
    }
}

/// Writes `plan` (byte by byte at its pace, if it has one) and says what the connection does
/// next.
///
/// # Errors
///
/// When a write fails: the connection is gone.
pub(crate) async fn write_plan<W: AsyncWrite + Unpin>(plan: &Plan, out: &mut W) -> io::Result<Then> {
    match plan.pace {
        Some(pace) => {
            for byte in plan.bytes.iter() {
                out.write_all(&[*byte]).await?;
                out.flush().await?;
                tokio::time::sleep(pace).await;
            }
        }
        None if plan.bytes.is_empty() => {}
        None => out.write_all(&plan.bytes).await?,
    }
    out.flush().await?;
    Ok(plan.then)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use gregor_protocol::frame::ApiKey;
    use gregor_protocol::messages::MetadataRequest;
    use gregor_protocol::ErrorCode;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    fn metadata() -> (RequestHeader, AnyRequest) {
        let header = RequestHeader {
            api_key: ApiKey::Metadata,
            api_version: 0,
            correlation_id: 1,
            client_id: None,
            unknown_tagged_fields: Default::default(),
        };
        (header, AnyRequest::Metadata(MetadataRequest::all_topics()))
    }

    #[tokio::test(start_paused = true)]
    async fn a_delay_comes_before_the_broker_carries_the_request_out() {
        let (header, request) = metadata();
        let started = tokio::time::Instant::now();
        let fault = Fault::Delay(Duration::from_millis(250));
        let plan = serve(Some(&fault), &header, request, |_| async move {
            // the handler runs once the delay is over
            assert_eq!(started.elapsed(), Duration::from_millis(250));
            Handled::Frame(Bytes::from_static(b"\0\0\0\x04\0\0\0\x01"))
        })
        .await;
        assert_eq!((plan.bytes.len(), plan.then), (8, Then::Serve));
    }

    #[tokio::test]
    async fn error_and_close_never_reach_the_broker() {
        for fault in [Fault::Error(ErrorCode::NotLeaderForPartition), Fault::Close] {
            let (header, request) = metadata();
            let plan = serve(Some(&fault), &header, request, |_| async { panic!("{fault:?} carried out") }).await;
            assert_eq!(plan.then, if fault == Fault::Close { Then::Close } else { Then::Serve }, "{fault:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn slowloris_writes_one_byte_per_interval() {
        let (header, request) = metadata();
        let fault = Fault::Slowloris(Duration::from_millis(10));
        let plan =
            serve(Some(&fault), &header, request, |_| async { Handled::Frame(Bytes::from_static(b"abcd")) }).await;
        let (mut client, mut server) = tokio::io::duplex(64);
        let started = tokio::time::Instant::now();
        assert_eq!(write_plan(&plan, &mut server).await.unwrap(), Then::Serve);
        assert_eq!(started.elapsed(), Duration::from_millis(40));
        drop(server);
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"abcd");
    }
}
