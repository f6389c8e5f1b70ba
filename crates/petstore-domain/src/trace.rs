//! Traces as the domain knows them: the `tracing` target of the spans that become
//! OpenTelemetry spans ([`TRACES`]), and the trace context a webhook delivery keeps of the change
//! that recorded it ([`TraceParent`]), so that each attempt's span links back to that request.
//! With the `opentelemetry` feature, a `TraceParent` is taken from a span's context (`of`) and
//! made into a remote one (`remote`), written once for the store and the sender.

use std::fmt;

/// The `tracing` target of the spans that become OpenTelemetry spans: the program's trace export
/// takes these and only these (and [`TRACE_ROOTS`]), and the logs never show them. Made with this
/// target, a span costs nothing but a check while traces are off, and while its request's trace
/// is one the sampler dropped: it is made only inside a kept trace.
pub const TRACES: &str = "petstore::traces";

/// The `tracing` target of the spans that may start a trace: a request's server span, a webhook
/// attempt's. Under [`TRACES`] (targets nest), so whatever turns those off turns these off too.
pub const TRACE_ROOTS: &str = "petstore::traces::roots";

/// A W3C Trace Context `traceparent` of version 00: a trace, a span in it, and whether it is
/// sampled. Written `00-{trace id: 32 hex}-{span id: 16 hex}-{flags: 2 hex}`, as the header and
/// the outbox column have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace, never all zeros.
    pub trace_id: [u8; 16],
    /// The span, never all zeros.
    pub span_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
}

impl TraceParent {
    /// The context of `trace_id` and `span_id` with `flags`; `None` when either id is all zeros
    /// (no trace).
    pub fn new(trace_id: [u8; 16], span_id: [u8; 8], flags: u8) -> Option<Self> {
        (trace_id != [0; 16] && span_id != [0; 8]).then_some(Self {
            trace_id,
            span_id,
            flags,
        })
    }

    /// The context of an OpenTelemetry span; `None` when it has none (a span that is not
    /// exported has all-zero ids).
    #[cfg(feature = "opentelemetry")]
    pub fn of(span: &opentelemetry::trace::SpanContext) -> Option<Self> {
        Self::new(
            span.trace_id().to_bytes(),
            span.span_id().to_bytes(),
            span.trace_flags().to_u8(),
        )
    }

    /// This context as OpenTelemetry holds a remote span's (one recorded elsewhere: a link's).
    #[cfg(feature = "opentelemetry")]
    pub fn remote(&self) -> opentelemetry::trace::SpanContext {
        use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
        SpanContext::new(
            TraceId::from_bytes(self.trace_id),
            SpanId::from_bytes(self.span_id),
            TraceFlags::new(self.flags),
            true,
            TraceState::default(),
        )
    }

    /// Reads `text` (version 00, lowercase hex, ids not all zeros); `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split('-');
        let (Some("00"), Some(trace), Some(span), Some(flags), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return None;
        };
        Self::new(hex(trace)?, hex(span)?, hex::<1>(flags)?[0])
    }

    /// Whether the trace is sampled.
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("00-")?;
        self.trace_id
            .iter()
            .try_for_each(|b| write!(f, "{b:02x}"))?;
        f.write_str("-")?;
        self.span_id.iter().try_for_each(|b| write!(f, "{b:02x}"))?;
        write!(f, "-{:02x}", self.flags)
    }
}

/// `N` bytes written as `2 N` lowercase hexadecimal digits.
fn hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let digit = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    let mut bytes = [0; N];
    for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_reads_back_as_it_was_written() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parent = TraceParent::parse(text).expect("a traceparent");
        assert!(parent.sampled());
        assert_eq!(
            parent.span_id,
            [0, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]
        );
        assert_eq!(parent.to_string(), text);
    }

    #[test]
    fn anything_but_a_version_00_traceparent_is_refused() {
        for text in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(text), None, "{text}");
        }
    }

    #[cfg(feature = "opentelemetry")]
    #[test]
    fn a_context_made_remote_is_read_back_as_it_was() {
        use opentelemetry::trace::SpanContext;
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parent = TraceParent::parse(text).expect("a traceparent");
        let remote = parent.remote();
        assert!(remote.is_remote() && remote.is_valid() && remote.is_sampled());
        assert_eq!(TraceParent::of(&remote), Some(parent));
        assert_eq!(
            TraceParent::of(&SpanContext::empty_context()),
            None,
            "no trace"
        );
    }
}
