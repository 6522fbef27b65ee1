//! Which requests get which [`Fault`], and how many times: [`Rule`], and the ordered list a
//! broker keeps of them ([`Rules`], pure: no clock, no IO).

use gregor_protocol::frame::ApiKey;

use super::Fault;

/// Which requests get a [`Fault`] (an API key or any, optionally only those sent to one
/// broker) and how many times (always, unless [`Rule::once`] or [`Rule::times`] says
/// otherwise). See the [module docs](super) for how rules are tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    api_key: Option<ApiKey>,
    broker: Option<i32>,
    remaining: Option<usize>,
    fault: Fault,
}

impl Rule {
    /// Every request with `api_key` gets `fault`.
    pub fn on(api_key: ApiKey, fault: Fault) -> Rule {
        Rule { api_key: Some(api_key), broker: None, remaining: None, fault }
    }

    /// Every request, whatever its API, gets `fault`.
    pub fn any(fault: Fault) -> Rule {
        Rule { api_key: None, broker: None, remaining: None, fault }
    }

    /// Only requests sent to the broker with this id (a [`HostileBroker`] has one id, 0 unless
    /// its builder says otherwise).
    ///
    /// [`HostileBroker`]: crate::hostile::HostileBroker
    pub fn on_broker(mut self, broker: i32) -> Rule {
        self.broker = Some(broker);
        self
    }

    /// Only the next matching request.
    pub fn once(self) -> Rule {
        self.times(1)
    }

    /// Only the next `n` matching requests (0: none, the rule is spent at once).
    pub fn times(mut self, n: usize) -> Rule {
        self.remaining = Some(n);
        self
    }

    /// Every matching request, for as long as the rule is there (the default).
    pub fn always(mut self) -> Rule {
        self.remaining = None;
        self
    }

    /// The fault it applies.
    pub fn fault(&self) -> &Fault {
        &self.fault
    }

    /// The API it applies to (`None`: every API).
    pub fn api_key(&self) -> Option<ApiKey> {
        self.api_key
    }

    /// The broker it applies to (`None`: every broker).
    pub fn broker(&self) -> Option<i32> {
        self.broker
    }

    /// How many more requests it applies to (`None`: no limit).
    pub fn remaining(&self) -> Option<usize> {
        self.remaining
    }

    fn matches(&self, broker: i32, api_key: ApiKey) -> bool {
        self.remaining != Some(0)
            && self.api_key.is_none_or(|k| k == api_key)
            && self.broker.is_none_or(|b| b == broker)
    }
}

/// A broker's rules, in the order they were added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rules {
    rules: Vec<Rule>,
}

impl Rules {
    pub(crate) fn new(rules: Vec<Rule>) -> Rules {
        Rules { rules }
    }

    /// Adds a rule, tried after the existing ones.
    pub(crate) fn push(&mut self, rule: Rule) {
        self.rules.push(rule);
    }

    /// Removes every rule.
    pub(crate) fn clear(&mut self) {
        self.rules.clear();
    }

    /// The fault for a request to `broker` with `api_key`, spending one use of the first rule
    /// that matches (a spent rule is dropped); `None` when no rule matches.
    pub(crate) fn take(&mut self, broker: i32, api_key: ApiKey) -> Option<Fault> {
        let i = self.rules.iter().position(|r| r.matches(broker, api_key))?;
        let rule = &mut self.rules[i];
        let fault = rule.fault.clone();
        if let Some(n) = rule.remaining.as_mut() {
            *n -= 1;
            if *n == 0 {
                self.rules.remove(i);
            }
        }
        Some(fault)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const FETCH: ApiKey = ApiKey::Fetch;
    const META: ApiKey = ApiKey::Metadata;

    /// A request to a broker with an API, and the fault it should get.
    type Request = (i32, ApiKey, Option<Fault>);

    /// Each case: the rules, then the requests in order and the fault each gets.
    #[test]
    fn rules_are_tried_in_order_and_spent() {
        let delay = Fault::Delay(Duration::from_millis(5));
        let cases: Vec<(&str, Vec<Rule>, Vec<Request>)> = vec![
            ("no rules", vec![], vec![(0, FETCH, None)]),
            (
                "always by default",
                vec![Rule::on(FETCH, Fault::Silent)],
                vec![(0, FETCH, Some(Fault::Silent)), (1, FETCH, Some(Fault::Silent)), (0, META, None)],
            ),
            (
                "once, then the next rule",
                vec![Rule::on(FETCH, Fault::Close).once(), Rule::any(delay.clone())],
                vec![(0, FETCH, Some(Fault::Close)), (0, FETCH, Some(delay.clone())), (0, META, Some(delay.clone()))],
            ),
            (
                "times(2)",
                vec![Rule::on(META, Fault::NoResponse).times(2)],
                vec![(0, META, Some(Fault::NoResponse)), (3, META, Some(Fault::NoResponse)), (0, META, None)],
            ),
            ("times(0) never applies", vec![Rule::any(Fault::Close).times(0)], vec![(0, META, None)]),
            (
                "always undoes a count",
                vec![Rule::any(Fault::Silent).once().always()],
                vec![(0, META, Some(Fault::Silent)), (0, META, Some(Fault::Silent))],
            ),
            (
                "one broker only; other brokers do not spend it",
                vec![Rule::on(FETCH, Fault::BadCrc).on_broker(2).once()],
                vec![(0, FETCH, None), (1, FETCH, None), (2, FETCH, Some(Fault::BadCrc)), (2, FETCH, None)],
            ),
            (
                "an earlier broad rule shadows a later narrow one",
                vec![Rule::any(Fault::Answer).once(), Rule::on(META, Fault::Close)],
                vec![(0, META, Some(Fault::Answer)), (0, META, Some(Fault::Close))],
            ),
        ];
        for (name, rules, requests) in cases {
            let mut book = Rules::new(rules);
            for (i, (broker, api, expected)) in requests.into_iter().enumerate() {
                assert_eq!(book.take(broker, api), expected, "{name}: request {i}");
            }
        }
    }

    #[test]
    fn spent_rules_are_dropped_and_clear_drops_all() {
        let mut book = Rules::default();
        book.push(Rule::on(FETCH, Fault::Close).once());
        book.push(Rule::any(Fault::Silent));
        assert_eq!(book.take(0, FETCH), Some(Fault::Close));
        assert_eq!(book, Rules::new(vec![Rule::any(Fault::Silent)]));
        book.clear();
        assert_eq!(book.take(0, FETCH), None);
    }

    #[test]
    fn accessors_say_what_was_built() {
        let rule = Rule::on(FETCH, Fault::Silent).on_broker(3).times(4);
        assert_eq!(
            (rule.api_key(), rule.broker(), rule.remaining(), rule.fault()),
            (Some(FETCH), Some(3), Some(4), &Fault::Silent)
        );
        let rule = Rule::any(Fault::Close);
        assert_eq!((rule.api_key(), rule.broker(), rule.remaining()), (None, None, None));
    }
}
