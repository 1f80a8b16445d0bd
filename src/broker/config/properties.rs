//! `java.util.Properties` text, the format of Apache's broker.conf.

/// Parses `java.util.Properties` text: `key=value`, `key: value` or `key value`; `#` and `!`
/// comment lines; a line ending in an odd number of backslashes continues on the next
/// (whose leading blanks are dropped); `\t \n \r \f \uXXXX` escapes. Values are trimmed at
/// both ends (Java keeps trailing blanks, which then fail Apache's own number parsing).
/// Errors carry the 1-based line number.
pub(super) fn parse(text: &str) -> Result<Vec<(String, String)>, (usize, &'static str)> {
    let mut pairs = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, first)) = lines.next() {
        let trimmed = first.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
            continue;
        }
        let mut logical = String::new();
        let mut line = trimmed;
        while ends_in_odd_backslashes(line) {
            logical.push_str(&line[..line.len() - 1]);
            line = match lines.next() {
                Some((_, next)) => next.trim_start(),
                None => "",
            };
        }
        logical.push_str(line);
        pairs.push(split_key_value(&logical).map_err(|reason| (index + 1, reason))?);
    }
    Ok(pairs)
}

fn ends_in_odd_backslashes(line: &str) -> bool {
    line.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

fn split_key_value(logical: &str) -> Result<(String, String), &'static str> {
    let mut key_end = logical.len();
    let mut escaped = false;
    for (i, c) in logical.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '=' || c == ':' || c.is_whitespace() {
            key_end = i;
            break;
        }
    }
    let rest = logical[key_end..].trim_start();
    let rest = rest
        .strip_prefix('=')
        .or_else(|| rest.strip_prefix(':'))
        .unwrap_or(rest);
    Ok((unescape(&logical[..key_end])?, unescape(rest.trim())?))
}

fn unescape(text: &str) -> Result<String, &'static str> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)
                    .and_then(char::from_u32)
                    .ok_or("malformed \\uXXXX escape")?;
                out.push(code);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_java_properties_syntax() {
        let text =
            "# comment\n  ! another\n\n  a=1\nb : 2 \nc 3\nd\\\n    e\nlong = one \\\n   two\n\
                    key\\=with\\:seps = v\\tx\\u0041\nempty\nbroker=last\nbroker=wins\r\n";
        let pairs = parse(text).unwrap();
        let expected = [
            ("a", "1"),
            ("b", "2"),
            ("c", "3"),
            ("de", ""),
            ("long", "one two"),
            ("key=with:seps", "v\txA"),
            ("empty", ""),
            ("broker", "last"),
            ("broker", "wins"),
        ];
        let got: Vec<_> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(got, expected);
        // Two backslashes are an escaped backslash, not a continuation.
        let pairs = parse("p=c:\\\\\nq=1").unwrap();
        assert_eq!(
            pairs,
            [("p".into(), "c:\\".into()), ("q".into(), "1".into())]
        );
    }
}
