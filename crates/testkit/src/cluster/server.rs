//! A broker's listener and connections: frames in, one request at a time per connection (as
//! Kafka 0.8 processes them), responses out in order.

use std::time::SystemTime;

use bytes::BytesMut;
use gregor_protocol::frame::{split_frame, RequestHeader};
use gregor_protocol::messages::AnyRequest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::handlers::{error_reply, handle, BrokerCtx, Reply};
use super::hooks::{Action, LoggedRequest};

/// Largest request frame a fake broker reads (`socket.request.max.bytes`, 100 MiB).
const MAX_REQUEST_BYTES: usize = 104_857_600;

pub(crate) async fn serve(listener: TcpListener, ctx: BrokerCtx, shutdown: watch::Receiver<bool>) {
    let mut stop = shutdown.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(connection(stream, ctx.clone(), shutdown.clone()));
                }
                Err(e) => tracing::warn!(broker = ctx.id, error = %e, "fake broker accept failed"),
            },
            _ = stop.changed() => return,
        }
    }
}

async fn connection(mut stream: TcpStream, ctx: BrokerCtx, mut shutdown: watch::Receiver<bool>) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    loop {
        let frame = match split_frame(&mut buf, MAX_REQUEST_BYTES) {
            Ok(Some(frame)) => frame,
            Ok(None) => {
                tokio::select! {
                    read = stream.read_buf(&mut buf) => match read {
                        Ok(0) | Err(_) => return,
                        Ok(_) => continue,
                    },
                    _ = shutdown.changed() => return,
                }
            }
            Err(e) => {
                tracing::debug!(broker = ctx.id, error = %e, "fake broker closes a connection: bad frame size");
                return;
            }
        };
        let served = tokio::select! {
            r = serve_one(&ctx, frame) => r,
            _ = shutdown.changed() => return,
        };
        match served {
            Reply::Frame(out) => {
                if stream.write_all(&out).await.is_err() {
                    return;
                }
            }
            Reply::Nothing => {}
            Reply::Close => return,
        }
    }
}

async fn serve_one(ctx: &BrokerCtx, mut frame: bytes::Bytes) -> Reply {
    // a paused broker holds every request until it is resumed
    let id = ctx.id;
    let far = tokio::time::Instant::now() + std::time::Duration::from_secs(86_400 * 365);
    ctx.shared.wait_until(far, |st| st.brokers.get(&id).is_none_or(|b| !b.paused)).await;
    let header = match RequestHeader::decode(&mut frame) {
        Ok(h) => h,
        Err(_) => return Reply::Close,
    };
    // 0.8 brokers close the connection on an API or version they do not know, or a body they
    // cannot parse
    let request = match AnyRequest::decode(&header, frame) {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(broker = id, api = %header.api_key, error = %e, "fake broker closes a connection: bad request");
            return Reply::Close;
        }
    };
    ctx.shared.hooks.record(LoggedRequest {
        broker: id,
        at: SystemTime::now(),
        header: header.clone(),
        request: request.clone(),
    });
    match ctx.shared.hooks.take(id, header.api_key) {
        Some(Action::Error(code)) => error_reply(&header, &request, code),
        Some(Action::Delay(d)) => {
            tokio::time::sleep(d).await;
            handle(ctx, &header, request).await
        }
        Some(Action::DropConnection) => Reply::Close,
        Some(Action::NoResponse) => {
            let _ = handle(ctx, &header, request).await;
            Reply::Nothing
        }
        None => handle(ctx, &header, request).await,
    }
}
