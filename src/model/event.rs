//! The messages the module publishes on `P events` (EMQ.PROGRESS): JSON
//! objects as EchoMQ's `@update_progress` makes them with `cjson.encode` —
//! the same fields and string escapes (`"`, `\`, `/` and control bytes;
//! other bytes as they are), in a fixed order (cjson's follows its table).

/// `{"event":"progress","job":<job>,"progress":<progress>}`.
pub fn progress(job: &[u8], progress: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(40 + job.len() + progress.len());
    out.extend_from_slice(b"{\"event\":\"progress\",\"job\":");
    string(&mut out, job);
    out.extend_from_slice(b",\"progress\":");
    string(&mut out, progress);
    out.push(b'}');
    out
}

/// A JSON string as cjson writes one.
fn string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b if b < 0x20 || b == 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            b => out.push(b),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_cjsons_object() {
        assert_eq!(
            progress(b"JOB-1", b"50"),
            br#"{"event":"progress","job":"JOB-1","progress":"50"}"#.to_vec()
        );
        assert_eq!(
            progress(b"J", b"a\"b\\c/d\n\x01\x7f\xc3\xa9"),
            b"{\"event\":\"progress\",\"job\":\"J\",\"progress\":\"a\\\"b\\\\c\\/d\\n\\u0001\\u007f\xc3\xa9\"}".to_vec()
        );
    }
}
