//! A byte-level bound on JSON nesting, checked before any parser recurses:
//! brackets are counted outside strings, so hostile depth costs one pass.

/// Whether `bytes` nests arrays and objects deeper than `max`.
pub fn exceeds(bytes: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in bytes {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::exceeds;

    #[test]
    fn counts_only_structural_brackets() {
        assert!(!exceeds(br#"{"a":[1,{"b":2}]}"#, 3));
        assert!(exceeds(br#"{"a":[1,{"b":2}]}"#, 2));
        assert!(!exceeds(br#"{"a":"[[[[{{{{\"[[["}"#, 1));
        let deep = "[".repeat(100_000);
        assert!(exceeds(deep.as_bytes(), 64));
    }
}
