//! A broker's listener and connections: frames in, one request at a time per connection (as
//! Kafka 0.8 processes them), responses out in order. Faults ([`crate::fault`]) apply here, to
//! every connection: which rule a request meets, whether the broker carries it out, what is
//! written back, and how new connections are greeted.

use std::time::SystemTime;

use bytes::{Bytes, BytesMut};
use gregor_protocol::frame::{split_frame, RequestHeader};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::handlers::{handle, BrokerCtx, Reply};
use super::hooks::LoggedRequest;
use super::modern::{self, SaslState};
use crate::fault::{self, Accept, Fault, Handled, Plan, Then};

/// Largest request frame a fake broker reads (`socket.request.max.bytes`, 100 MiB).
const MAX_REQUEST_BYTES: usize = 104_857_600;

/// How long a TLS handshake may take before the fake broker closes the connection.
const TLS_HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

pub(crate) async fn serve(listener: TcpListener, ctx: BrokerCtx, shutdown: watch::Receiver<bool>) {
    let mut stop = shutdown.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => match counted(&ctx).accept(ctx.id) {
                    Accept::Close => drop(stream),
                    Accept::Stall => {
                        // hold the socket, never read, until the broker stops
                        let mut stop = shutdown.clone();
                        tokio::spawn(async move {
                            let _held = stream;
                            let _ = stop.changed().await;
                        });
                    }
                    accept @ (Accept::Serve | Accept::Silent) => {
                        let _ = stream.set_nodelay(true);
                        let muted = accept == Accept::Silent;
                        match ctx.shared.tls.as_ref().map(|tls| tls.acceptor()) {
                            None => {
                                tokio::spawn(connection(stream, ctx.clone(), shutdown.clone(), muted));
                            }
                            Some(acceptor) => {
                                let (ctx, mut stop) = (ctx.clone(), shutdown.clone());
                                tokio::spawn(async move {
                                    let handshake = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream));
                                    let stream = tokio::select! {
                                        done = handshake => match done {
                                            Ok(Ok(stream)) => stream,
                                            Ok(Err(e)) => {
                                                ctx.shared.hooks.count_handshake_failed();
                                                tracing::debug!(broker = ctx.id, error = %e, "fake broker: TLS handshake failed");
                                                return;
                                            }
                                            Err(_) => {
                                                ctx.shared.hooks.count_handshake_failed();
                                                tracing::debug!(broker = ctx.id, "fake broker: TLS handshake timed out");
                                                return;
                                            }
                                        },
                                        _ = stop.changed() => return,
                                    };
                                    connection(stream, ctx, stop, muted).await;
                                });
                            }
                        }
                    }
                },
                Err(e) => tracing::warn!(broker = ctx.id, error = %e, "fake broker accept failed"),
            },
            _ = stop.changed() => return,
        }
    }
}

/// Counts an accepted connection; the hooks, to ask how to greet it.
fn counted(ctx: &BrokerCtx) -> &super::hooks::Hooks {
    ctx.shared.hooks.count_accepted();
    &ctx.shared.hooks
}

/// Serves one connection until the client closes it, a request is malformed, a fault closes
/// it or the broker stops. A muted connection (a fault silenced it) reads and logs requests
/// and does nothing else.
async fn connection<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    ctx: BrokerCtx,
    mut shutdown: watch::Receiver<bool>,
    mut muted: bool,
) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut sasl = match ctx.shared.modern.as_ref().and_then(|m| m.sasl.as_ref()) {
        Some(_) => SaslState::Handshake,
        None => SaslState::Open,
    };
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
        let plan = tokio::select! {
            plan = serve_one(&ctx, frame, muted, &mut sasl) => plan,
            _ = shutdown.changed() => return,
        };
        let then = tokio::select! {
            written = fault::write_plan(&plan, &mut stream) => match written {
                Ok(then) => then,
                Err(_) => return,
            },
            _ = shutdown.changed() => return,
        };
        match then {
            Then::Serve => {}
            Then::Mute => muted = true,
            Then::Close => return,
        }
    }
}

async fn serve_one(ctx: &BrokerCtx, mut frame: Bytes, muted: bool, sasl: &mut SaslState) -> Plan {
    // a paused broker holds every request until it is resumed
    let id = ctx.id;
    let far = tokio::time::Instant::now() + std::time::Duration::from_secs(86_400 * 365);
    ctx.shared.wait_until(far, |st| st.brokers.get(&id).is_none_or(|b| !b.paused)).await;
    let frame_len = frame.len() + 4;
    let header = match RequestHeader::decode(&mut frame) {
        Ok(h) => h,
        Err(_) => return Plan::close(),
    };
    let request = match &ctx.shared.modern {
        // 0.8 brokers close the connection on an API or version they do not know, or a body
        // they cannot parse
        None => match crate::kafka_0_8_2::decode_request(&header, frame) {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(broker = id, api = %header.api_key, error = %e, "fake broker closes a connection: bad request");
                return Plan::close();
            }
        },
        Some(modern) => match modern::decode_request(modern, &header, frame) {
            modern::Decoded::Request(r) => r,
            modern::Decoded::Answer(bytes) => return Plan::send(bytes),
            modern::Decoded::Close => {
                tracing::debug!(broker = id, api = %header.api_key, version = header.api_version, "fake broker closes a connection: an API, version or body it does not serve");
                return Plan::close();
            }
        },
    };
    if let Some(users) = ctx.shared.modern.as_ref().and_then(|m| m.sasl.as_ref()) {
        let reply = match modern::sasl_gate(users, sasl, &header, &request) {
            modern::Gate::Pass => None,
            modern::Gate::Answer(reply) => Some((reply, false)),
            modern::Gate::AnswerThenClose(reply) => Some((reply, true)),
            modern::Gate::Close => {
                tracing::debug!(broker = id, api = %header.api_key, "fake broker closes a connection: not allowed before SASL authentication");
                return Plan::close();
            }
        };
        if let Some((reply, close)) = reply {
            return match reply {
                Reply::Frame(out) if close => Plan::send_then_close(out.freeze()),
                Reply::Frame(out) => Plan::send(out.freeze()),
                Reply::Nothing | Reply::Close => Plan::close(),
            };
        }
    }
    let fault = if muted { None } else { ctx.shared.hooks.take(id, header.api_key) };
    let logged = match (&fault, muted) {
        (_, true) => Fault::Silent,
        (Some(f), false) => f.clone(),
        (None, false) => Fault::Answer,
    };
    ctx.shared.hooks.record(LoggedRequest {
        broker: id,
        at: SystemTime::now(),
        header: header.clone(),
        request: request.clone(),
        fault: logged,
    });
    if muted {
        return Plan::mute();
    }
    let timing = ctx.shared.config.timing;
    let arrived = tokio::time::Instant::now();
    let due = if timing.is_instant() { None } else { Some(request_due(ctx, &timing, arrived, frame_len, &request)) };
    let plan = fault::serve(fault.as_ref(), &header, request, |request| async {
        match handle(ctx, &header, request).await {
            Reply::Frame(out) => Handled::Frame(out.freeze()),
            Reply::Nothing => Handled::Nothing,
            Reply::Close => Handled::Close,
        }
    })
    .await;
    if let Some(due) = due {
        // what goes out takes its turn on the broker too (a Fetch's records)
        let now = tokio::time::Instant::now();
        let out = ctx.shared.clocks().broker(id, now, plan.bytes.len(), timing.broker_bytes_per_sec);
        let answer_at = due.max(out);
        super::alarm::sleep_until(answer_at).await;
        // what the timing profile did to this request (RUST_LOG=gregor_testkit::timing=trace)
        tracing::trace!(
            target: "gregor_testkit::timing",
            broker = id,
            api = %header.api_key,
            bytes = frame_len,
            handled_us = now.saturating_duration_since(arrived).as_micros() as u64,
            due_us = answer_at.saturating_duration_since(arrived).as_micros() as u64,
            late_us = answer_at.elapsed().as_micros() as u64,
            "answer due"
        );
    }
    plan
}

/// When the answer to a request may go out under [`Timing`](super::config::Timing): after the
/// service time, after its bytes have had their turn on the broker, and for a Produce after
/// each partition's append has had its turn (plus the followers' fetch for acks=-1).
fn request_due(
    ctx: &BrokerCtx,
    timing: &super::config::Timing,
    arrived: tokio::time::Instant,
    frame_len: usize,
    request: &gregor_protocol::messages::AnyRequest,
) -> tokio::time::Instant {
    let mut clocks = ctx.shared.clocks();
    let mut due =
        clocks.broker(ctx.id, arrived, frame_len, timing.broker_bytes_per_sec).max(arrived + timing.request_service);
    if let gregor_protocol::messages::AnyRequest::Produce(p) = request {
        for t in &p.topics {
            for part in &t.partitions {
                let appended = clocks.append(
                    &t.topic,
                    part.partition,
                    arrived,
                    part.message_set.len(),
                    timing.partition_append_bytes_per_sec,
                );
                due = due.max(appended);
            }
        }
        if p.required_acks == -1 {
            due += timing.replica_fetch_delay;
        }
    }
    due
}
