//! `gregor audit`: the audit check (LinkedIn's pattern) with gregor-admin. Producers with audit
//! on publish per topic and window the offsets of what they had acknowledged; this reads those
//! records and the topics and prints, per topic and window, produced against seen, and per
//! partition what is missing and what is unaudited. Exit 0 when nothing is missing, 1
//! otherwise (or when a partition could not be read), 2 on a usage error.

use gregor_admin::audit::{AuditOptions, AuditReport, PartitionAudit, WindowAudit};
use serde_json::{json, Value};

use crate::admin::connect;
use crate::cli::{AuditArgs, OutputFormat};
use crate::error::CliError;
use crate::table::{opt, print, print_json, Table};

/// Runs `gregor audit`.
pub(crate) async fn run(args: AuditArgs) -> Result<(), CliError> {
    let admin = connect(&args.zk).await?;
    let mut options = AuditOptions::new().audit_topic(args.audit_topic.clone());
    if !args.topic.is_empty() {
        options = options.topics(args.topic.iter().cloned());
    }
    if let Some(bytes) = args.fetch_max_bytes {
        options = options.fetch_max_bytes(bytes);
    }
    let result = admin.audit(&options).await;
    let _ = admin.close().await;
    let report = result.map_err(|e| match e {
        gregor_admin::Error::UnknownTopic { ref topic } if *topic == args.audit_topic => CliError::new(
            format!(
                "audit topic {topic} does not exist: no producer with audit on has published yet (or pass \
                 --audit-topic)"
            ),
            e,
        ),
        e => CliError::new("could not check the audit", e),
    })?;
    match args.output {
        OutputFormat::Json => print_json(&to_json(&report)).await?,
        OutputFormat::Table => print(&to_text(&report)).await?,
    }
    verdict(&report)
}

/// Exit 0 when complete, 1 with a one-line reason otherwise.
fn verdict(report: &AuditReport) -> Result<(), CliError> {
    if report.is_complete() {
        return Ok(());
    }
    let unreadable = report.partitions.iter().filter(|p| p.error.is_some()).count();
    let mut reasons = Vec::new();
    if report.missing() > 0 {
        reasons.push(format!("{} acknowledged messages missing", report.missing()));
    }
    if unreadable > 0 {
        reasons.push(format!("{unreadable} partitions could not be read"));
    }
    Err(CliError::msg(format!("audit incomplete: {}", reasons.join(", "))))
}

/// `98.50%`, or `-` when nothing was checkable.
fn percent(w: &WindowAudit) -> String {
    w.completeness().map_or_else(|| "-".to_owned(), |c| format!("{c:.2}%"))
}

/// `2024-05-01T12:34:00Z` for milliseconds since the epoch (UTC, civil calendar).
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rem / 3600, rem / 60 % 60, rem % 60);
    let millis = ms % 1000;
    if millis == 0 {
        format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
    } else {
        format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{millis:03}Z")
    }
}

/// `60s`, `200ms`, `5m`.
fn length(ms: u64) -> String {
    match ms {
        ms if ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{ms}ms"),
    }
}

fn topics(report: &AuditReport) -> Vec<String> {
    let mut topics: Vec<String> = report.windows.iter().map(|w| w.topic.clone()).collect();
    topics.extend(report.partitions.iter().map(|p| p.topic.clone()));
    topics.sort();
    topics.dedup();
    topics
}

fn to_text(report: &AuditReport) -> String {
    let status =
        if report.is_complete() { "COMPLETE".to_owned() } else { format!("INCOMPLETE ({} missing)", report.missing()) };
    let mut text = format!(
        "status: {status}\naudit topic: {}, records: {} ({} duplicates, {} malformed), producers: {}\n\
         produced: {}, seen: {}, missing: {}, failed: {}, unaudited: {}\n\n",
        report.audit_topic,
        report.records,
        report.duplicates,
        report.malformed,
        report.producers.len(),
        report.produced(),
        report.seen(),
        report.missing(),
        report.failed(),
        report.unaudited(),
    );
    let mut t = Table::new(&[
        "TOPIC",
        "WINDOW_START",
        "WINDOW",
        "PRODUCERS",
        "PRODUCED",
        "SEEN",
        "MISSING",
        "FAILED",
        "UNVERIFIED",
        "EXPIRED",
        "COMPLETENESS",
    ]);
    for topic in topics(report) {
        for w in report.topic_windows(&topic) {
            t.row(vec![
                w.topic.clone(),
                utc(w.window_start_ms),
                length(w.window_ms),
                w.producers.to_string(),
                w.produced.to_string(),
                w.seen.to_string(),
                w.missing.to_string(),
                w.failed.to_string(),
                w.unverified.to_string(),
                w.expired.to_string(),
                percent(w),
            ]);
        }
        let total = report.topic_total(&topic);
        t.row(vec![
            topic.clone(),
            "(all)".to_owned(),
            "-".to_owned(),
            "-".to_owned(),
            total.produced.to_string(),
            total.seen.to_string(),
            total.missing.to_string(),
            total.failed.to_string(),
            total.unverified.to_string(),
            total.expired.to_string(),
            percent(&total),
        ]);
    }
    text.push_str(&t.render());
    let mut p = Table::new(&[
        "TOPIC",
        "PARTITION",
        "LOG_START",
        "LOG_END",
        "CLAIMED",
        "SEEN",
        "MISSING",
        "OVERWRITTEN",
        "UNAUDITED",
        "NOTE",
    ]);
    for line in &report.partitions {
        p.row(vec![
            line.topic.clone(),
            line.partition.to_string(),
            opt(line.log_start),
            opt(line.log_end),
            line.claimed.to_string(),
            line.seen.to_string(),
            line.missing.to_string(),
            line.overwritten.to_string(),
            line.unaudited.to_string(),
            note(line),
        ]);
    }
    if !p.is_empty() {
        text.push('\n');
        text.push_str(&p.render());
    }
    for m in &report.malformed_examples {
        text.push_str(&format!(
            "\nmalformed audit record at {}/{} offset {}: {}",
            report.audit_topic, m.partition, m.offset, m.reason
        ));
    }
    text
}

fn note(line: &PartitionAudit) -> String {
    match (&line.error, line.log_start) {
        (Some(e), _) => format!("not read: {e}"),
        (None, None) => "partition does not exist".to_owned(),
        (None, Some(_)) if line.unconfirmed > 0 => format!("{} seen in damaged ranges (unconfirmed)", line.unconfirmed),
        _ => String::new(),
    }
}

fn window_json(w: &WindowAudit) -> Value {
    json!({
        "topic": w.topic,
        "window_start_ms": w.window_start_ms,
        "window_start": utc(w.window_start_ms),
        "window_ms": w.window_ms,
        "producers": w.producers,
        "produced": w.produced,
        "seen": w.seen,
        "unconfirmed": w.unconfirmed,
        "missing": w.missing,
        "overwritten": w.overwritten,
        "expired": w.expired,
        "unverified": w.unverified,
        "unchecked": w.unchecked,
        "failed": w.failed,
        "completeness": w.completeness(),
        "complete": w.is_complete(),
    })
}

fn to_json(report: &AuditReport) -> Value {
    let partitions: Vec<Value> = report
        .partitions
        .iter()
        .map(|p| {
            json!({
                "topic": p.topic,
                "partition": p.partition,
                "log_start": p.log_start,
                "log_end": p.log_end,
                "claimed": p.claimed,
                "seen": p.seen,
                "unconfirmed": p.unconfirmed,
                "missing": p.missing,
                "overwritten": p.overwritten,
                "expired": p.expired,
                "unaudited": p.unaudited,
                "error": p.error,
            })
        })
        .collect();
    let totals: Vec<Value> = topics(report)
        .iter()
        .map(|t| {
            let mut v = window_json(&report.topic_total(t));
            if let Some(o) = v.as_object_mut() {
                for k in ["window_start_ms", "window_start", "window_ms"] {
                    o.remove(k);
                }
                o.insert(
                    "unaudited".into(),
                    json!(report.partitions.iter().filter(|p| p.topic == *t).map(|p| p.unaudited).sum::<u64>()),
                );
            }
            v
        })
        .collect();
    let malformed: Vec<Value> = report
        .malformed_examples
        .iter()
        .map(|m| json!({"partition": m.partition, "offset": m.offset, "reason": m.reason}))
        .collect();
    json!({
        "complete": report.is_complete(),
        "audit_topic": report.audit_topic,
        "records": report.records,
        "duplicates": report.duplicates,
        "malformed": report.malformed,
        "malformed_examples": malformed,
        "producers": report.producers,
        "produced": report.produced(),
        "seen": report.seen(),
        "missing": report.missing(),
        "failed": report.failed(),
        "unaudited": report.unaudited(),
        "topics": totals,
        "windows": report.windows.iter().map(window_json).collect::<Vec<_>>(),
        "partitions": partitions,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    #[test]
    fn the_default_audit_topic_is_the_one_producers_publish_to() {
        let cli = Cli::try_parse_from(["gregor", "audit", "--zookeeper", "127.0.0.1:2181"]).unwrap();
        let Command::Audit(args) = cli.command else { panic!("an audit command") };
        assert_eq!(args.audit_topic, gregor_producer::audit::DEFAULT_AUDIT_TOPIC);
    }

    #[test]
    fn times_print_as_utc() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_700_000_040_200), "2023-11-14T22:14:00.200Z");
        assert_eq!((length(60_000), length(5_000), length(200)), ("1m".into(), "5s".into(), "200ms".into()));
    }

    #[test]
    fn the_verdict_names_what_is_missing() {
        let mut report = AuditReport::default();
        assert!(verdict(&report).is_ok());
        report.windows.push(WindowAudit {
            topic: "t".into(),
            produced: 10,
            seen: 7,
            missing: 3,
            ..WindowAudit::default()
        });
        report.partitions.push(PartitionAudit {
            topic: "t".into(),
            error: Some("no leader".into()),
            ..PartitionAudit::default()
        });
        let e = verdict(&report).unwrap_err();
        assert_eq!(e.to_string(), "audit incomplete: 3 acknowledged messages missing, 1 partitions could not be read");
        assert_eq!(e.code(), 1);
        let text = to_text(&report);
        assert!(text.starts_with("status: INCOMPLETE (3 missing)"), "{text}");
        assert!(text.contains("70.00%"), "{text}");
        assert_eq!(to_json(&report)["topics"][0]["missing"], 3);
    }
}
