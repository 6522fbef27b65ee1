//! Which version of each API to speak to one broker.
//!
//! A broker from Kafka 0.10 on answers ApiVersions (KIP-35) with the versions of every API it
//! speaks; each request then goes out in the highest version that both the broker and
//! gregor-protocol implement. A Kafka 0.8 or 0.9 broker does not know ApiVersions and closes
//! the connection on it: it gets the versions of a configured release instead
//! (`broker.version.fallback`, as librdkafka names it). Versions are per connection: the
//! brokers of one cluster may differ during an upgrade.
//!
//! ```text
//!  connect ─► ApiVersions v3 ─► answer ───────────────► BrokerVersions::negotiated
//!                  │              └ error 35 (v0 body) ─► retry at the broker's highest ≤ 3
//!                  └ connection closed ─► reconnect ─► BrokerVersions::fallback(0.8.2 ...)
//! ```
//!
//! The choice is pure ([`BrokerVersions::pick`]): the intersection of two ranges, its top.

use std::fmt;
use std::str::FromStr;

use gregor_protocol::frame::{ApiKey, VersionRange};
use gregor_protocol::messages::ApiVersionsResponse;
use gregor_protocol::Request;

/// The release whose versions a broker that does not answer ApiVersions gets
/// (`broker.version.fallback`). ApiVersions arrived in Kafka 0.10.0, so only older releases
/// are possible here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BrokerVersionFallback {
    /// Kafka 0.8.0: Produce, Fetch, Offsets, Metadata v0.
    V0_8_0,
    /// Kafka 0.8.1: adds OffsetCommit and OffsetFetch v0 (offsets in ZooKeeper).
    V0_8_1,
    /// Kafka 0.8.2: OffsetCommit and OffsetFetch v0-v1 (offsets in Kafka), ConsumerMetadata v0.
    V0_8_2,
    /// Kafka 0.9.0: Produce and Fetch v1 (throttle time), OffsetCommit v2 and the group APIs
    /// (GroupCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup, DescribeGroups,
    /// ListGroups) v0.
    V0_9_0,
}

impl BrokerVersionFallback {
    /// The default: Kafka 0.8.2, the release gregor was built on.
    pub const DEFAULT: BrokerVersionFallback = BrokerVersionFallback::V0_8_2;

    /// The API versions of the release (from Kafka's protocol history).
    pub fn apis(self) -> &'static [(ApiKey, i16, i16)] {
        use ApiKey::*;
        const V0_8_0: &[(ApiKey, i16, i16)] = &[(Produce, 0, 0), (Fetch, 0, 0), (Offsets, 0, 0), (Metadata, 0, 0)];
        const V0_8_1: &[(ApiKey, i16, i16)] = &[
            (Produce, 0, 0),
            (Fetch, 0, 0),
            (Offsets, 0, 0),
            (Metadata, 0, 0),
            (OffsetCommit, 0, 0),
            (OffsetFetch, 0, 0),
        ];
        const V0_8_2: &[(ApiKey, i16, i16)] = &[
            (Produce, 0, 0),
            (Fetch, 0, 0),
            (Offsets, 0, 0),
            (Metadata, 0, 0),
            (OffsetCommit, 0, 1),
            (OffsetFetch, 0, 1),
            (ConsumerMetadata, 0, 0),
        ];
        const V0_9_0: &[(ApiKey, i16, i16)] = &[
            (Produce, 0, 1),
            (Fetch, 0, 1),
            (Offsets, 0, 0),
            (Metadata, 0, 0),
            (OffsetCommit, 0, 2),
            (OffsetFetch, 0, 1),
            (ConsumerMetadata, 0, 0),
            (JoinGroup, 0, 0),
            (Heartbeat, 0, 0),
            (LeaveGroup, 0, 0),
            (SyncGroup, 0, 0),
            (DescribeGroups, 0, 0),
            (ListGroups, 0, 0),
        ];
        match self {
            BrokerVersionFallback::V0_8_0 => V0_8_0,
            BrokerVersionFallback::V0_8_1 => V0_8_1,
            BrokerVersionFallback::V0_8_2 => V0_8_2,
            BrokerVersionFallback::V0_9_0 => V0_9_0,
        }
    }
}

impl fmt::Display for BrokerVersionFallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BrokerVersionFallback::V0_8_0 => "0.8.0",
            BrokerVersionFallback::V0_8_1 => "0.8.1",
            BrokerVersionFallback::V0_8_2 => "0.8.2",
            BrokerVersionFallback::V0_9_0 => "0.9.0",
        })
    }
}

/// Why a `broker.version.fallback` value was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidFallback(pub String);

impl fmt::Display for InvalidFallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidFallback {}

impl FromStr for BrokerVersionFallback {
    type Err = InvalidFallback;

    /// Reads a Kafka release: `0.8.0`, `0.8.1`, `0.8.2` (or `0.8.2.2`), `0.9.0` (or `0.9.0.1`).
    /// A release from 0.10 on answers ApiVersions, so it is refused with that hint.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<u32> = s
            .trim()
            .split('.')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| InvalidFallback(format!("{s:?} is not a Kafka release (expected e.g. 0.8.2)")))?;
        match parts.as_slice() {
            [0, 8, 0, ..] | [0, 8] => Ok(BrokerVersionFallback::V0_8_0),
            [0, 8, 1, ..] => Ok(BrokerVersionFallback::V0_8_1),
            [0, 8, _, ..] => Ok(BrokerVersionFallback::V0_8_2),
            [0, 9, ..] => Ok(BrokerVersionFallback::V0_9_0),
            [major, minor, ..] if (*major, *minor) >= (0, 10) => Err(InvalidFallback(format!(
                "{s}: brokers from Kafka 0.10 on answer ApiVersions, so they need no fallback \
                 (keep api.version.request=true); the fallback is for 0.8.0-0.9.0"
            ))),
            _ => Err(InvalidFallback(format!("{s:?} is not a Kafka release gregor knows (0.8.0 to 0.9.0)"))),
        }
    }
}

/// Where gregor's clients send less than gregor-protocol implements, their highest version:
/// Produce and Fetch v13 name topics by id (which the clients do not track yet), ListOffsets
/// v10 adds a remote-storage timeout they have no setting for, Metadata v13 only a top-level
/// error code.
pub const CLIENT_CAPS: &[(ApiKey, i16)] =
    &[(ApiKey::Produce, 12), (ApiKey::Fetch, 12), (ApiKey::Offsets, 9), (ApiKey::Metadata, 12)];

/// The versions of `api` gregor's clients send: what gregor-protocol implements
/// ([`ApiKey::versions`]), capped by [`CLIENT_CAPS`].
pub fn client_versions(api: ApiKey) -> Option<VersionRange> {
    let mut range = api.versions()?;
    if let Some(&(_, cap)) = CLIENT_CAPS.iter().find(|(key, _)| *key == api) {
        range.max = range.max.min(cap);
    }
    (range.min <= range.max).then_some(range)
}

/// Where a broker's versions came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSource {
    /// Its ApiVersions answer.
    Negotiated,
    /// The configured release: it closed the connection on ApiVersions (Kafka before 0.10), or
    /// `api.version.request` is off.
    Fallback(BrokerVersionFallback),
}

/// The versions of each API one broker speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerVersions {
    source: VersionSource,
    /// (api key, min, max), sorted by key.
    apis: Vec<(i16, i16, i16)>,
}

/// No version of an API is both implemented by gregor and spoken by the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoCommonVersion {
    /// The API.
    pub api: ApiKey,
    /// The versions gregor implements (`None`: none).
    pub ours: Option<(i16, i16)>,
    /// The versions the broker speaks (`None`: it does not know the API).
    pub theirs: Option<(i16, i16)>,
}

impl fmt::Display for NoCommonVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let range = |r: Option<(i16, i16)>| r.map_or("none".to_string(), |(a, b)| format!("v{a}-v{b}"));
        write!(
            f,
            "no common version of {}: gregor implements {}, the broker speaks {}",
            self.api,
            range(self.ours),
            range(self.theirs)
        )
    }
}

impl std::error::Error for NoCommonVersion {}

impl BrokerVersions {
    /// The versions a broker listed in its ApiVersions answer.
    pub fn negotiated(answer: &ApiVersionsResponse) -> BrokerVersions {
        let mut apis: Vec<(i16, i16, i16)> =
            answer.api_keys.iter().map(|k| (k.api_key, k.min_version, k.max_version)).collect();
        apis.sort_unstable();
        apis.dedup_by_key(|a| a.0);
        BrokerVersions { source: VersionSource::Negotiated, apis }
    }

    /// The versions of a release, for a broker that does not answer ApiVersions.
    pub fn fallback(release: BrokerVersionFallback) -> BrokerVersions {
        let mut apis: Vec<(i16, i16, i16)> = release.apis().iter().map(|&(k, lo, hi)| (k.code(), lo, hi)).collect();
        apis.sort_unstable();
        BrokerVersions { source: VersionSource::Fallback(release), apis }
    }

    /// Where the versions came from.
    pub fn source(&self) -> VersionSource {
        self.source
    }

    /// The versions the broker speaks of `api`, if any.
    pub fn range(&self, api: ApiKey) -> Option<(i16, i16)> {
        let code = api.code();
        self.apis.binary_search_by_key(&code, |a| a.0).ok().map(|i| (self.apis[i].1, self.apis[i].2))
    }

    /// Every API the broker speaks: (key, min, max), by key.
    pub fn apis(&self) -> impl Iterator<Item = (ApiKey, i16, i16)> + '_ {
        self.apis.iter().map(|&(k, lo, hi)| (ApiKey::from_i16(k), lo, hi))
    }

    /// The highest version of `api` in both `ours` and what the broker speaks.
    ///
    /// # Errors
    ///
    /// [`NoCommonVersion`] when the ranges do not meet (or the broker lacks the API).
    pub fn pick(&self, api: ApiKey, ours: Option<VersionRange>) -> Result<i16, NoCommonVersion> {
        let theirs = self.range(api);
        let fail = || NoCommonVersion { api, ours: ours.map(|r| (r.min, r.max)), theirs };
        let (Some(ours), Some((lo, hi))) = (ours, theirs) else { return Err(fail()) };
        let top = ours.max.min(hi);
        if top < ours.min.max(lo) {
            return Err(fail());
        }
        Ok(top)
    }

    /// [`BrokerVersions::pick`] for the versions gregor-protocol implements of `R`.
    ///
    /// # Errors
    ///
    /// As [`BrokerVersions::pick`].
    pub fn pick_for<R: Request>(&self) -> Result<i16, NoCommonVersion> {
        self.pick(R::KEY, Some(R::VERSIONS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(apis: &[(i16, i16, i16)]) -> ApiVersionsResponse {
        ApiVersionsResponse::listing(apis.iter().copied())
    }

    #[test]
    fn the_top_of_the_intersection_is_chosen() {
        let v = BrokerVersions::negotiated(&answer(&[(3, 0, 12), (0, 3, 10), (1, 4, 16)]));
        let ours = |min, max| Some(VersionRange { min, max });
        let cases = [
            (ApiKey::Metadata, ours(0, 12), Ok(12)),
            (ApiKey::Metadata, ours(0, 9), Ok(9)),
            (ApiKey::Metadata, ours(0, 13), Ok(12)),
            // a Kafka 4 broker: Produce from v3 only; a 0.8.2-only client has nothing in common
            (ApiKey::Produce, ours(0, 0), Err(())),
            (ApiKey::Produce, ours(0, 11), Ok(10)),
            (ApiKey::Fetch, ours(0, 3), Err(())),
            (ApiKey::Fetch, ours(4, 4), Ok(4)),
            // the broker lacks the API, or gregor does
            (ApiKey::Offsets, ours(0, 8), Err(())),
            (ApiKey::Metadata, None, Err(())),
        ];
        for (api, ours, want) in cases {
            assert_eq!(v.pick(api, ours).map_err(|_| ()), want, "{api} {ours:?}");
        }
        let err = v.pick(ApiKey::Produce, ours(0, 0)).unwrap_err();
        assert_eq!(err.to_string(), "no common version of Produce: gregor implements v0-v0, the broker speaks v3-v10");
        assert_eq!(v.source(), VersionSource::Negotiated);
        assert_eq!(v.apis().next(), Some((ApiKey::Produce, 3, 10)));
    }

    #[test]
    fn fallback_releases_parse_and_name_their_versions() {
        let parse = |s: &str| s.parse::<BrokerVersionFallback>();
        assert_eq!(parse("0.8.2"), Ok(BrokerVersionFallback::V0_8_2));
        assert_eq!(parse("0.8.2.2"), Ok(BrokerVersionFallback::V0_8_2));
        assert_eq!(parse("0.8.1.1"), Ok(BrokerVersionFallback::V0_8_1));
        assert_eq!(parse("0.8.0"), Ok(BrokerVersionFallback::V0_8_0));
        assert_eq!(parse("0.9.0.1"), Ok(BrokerVersionFallback::V0_9_0));
        assert!(parse("0.10.2").unwrap_err().0.contains("answer ApiVersions"));
        assert!(parse("3.7.0").unwrap_err().0.contains("answer ApiVersions"));
        assert!(parse("latest").is_err());
        let v = BrokerVersions::fallback(BrokerVersionFallback::V0_8_2);
        assert_eq!(v.source(), VersionSource::Fallback(BrokerVersionFallback::V0_8_2));
        assert_eq!(v.range(ApiKey::OffsetCommit), Some((0, 1)));
        assert_eq!(v.range(ApiKey::JoinGroup), None);
        assert_eq!(v.pick(ApiKey::Produce, Some(VersionRange { min: 0, max: 10 })), Ok(0));
        let v = BrokerVersions::fallback(BrokerVersionFallback::V0_9_0);
        assert_eq!(v.pick(ApiKey::Produce, Some(VersionRange { min: 0, max: 10 })), Ok(1));
        assert_eq!(BrokerVersions::fallback(BrokerVersionFallback::V0_8_0).range(ApiKey::OffsetFetch), None);
    }
}
