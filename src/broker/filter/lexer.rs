//! The tokens of Apache RocketMQ's `SelectorParser.jj`: keywords and identifiers without
//! regard to case, decimal, floating-point and quoted string literals, `--` and `/* */`
//! comments. At each position the longest token wins, as in JavaCC.
//!
//! Tokens are made on demand, as JavaCC's token manager makes them: Apache's grammar does not
//! end at end of input, so text after a complete expression is only lexed as far as the parser
//! looks ahead, and a stray character there is not an error.

use super::CompileError;

#[derive(Clone, Debug, PartialEq)]
pub enum Token {
    Not,
    And,
    Or,
    Between,
    In,
    True,
    False,
    Null,
    Is,
    Contains,
    StartsWith,
    EndsWith,
    /// The literal's text, an `l`/`L` suffix included.
    Decimal(String),
    Float(String),
    /// The decoded value (`''` is one quote).
    Str(String),
    Id(String),
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Open,
    Comma,
    Close,
    Plus,
    Minus,
    End,
}

const KEYWORDS: [(&str, Token); 12] = [
    ("NOT", Token::Not),
    ("AND", Token::And),
    ("OR", Token::Or),
    ("BETWEEN", Token::Between),
    ("IN", Token::In),
    ("TRUE", Token::True),
    ("FALSE", Token::False),
    ("NULL", Token::Null),
    ("IS", Token::Is),
    ("CONTAINS", Token::Contains),
    ("STARTSWITH", Token::StartsWith),
    ("ENDSWITH", Token::EndsWith),
];

/// A token and the byte offset it starts at (for error messages).
#[derive(Clone, Debug)]
pub struct Lexed {
    pub token: Token,
    pub at: usize,
}

pub struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str) -> Self {
        Self { text, pos: 0 }
    }

    /// The next token, [`Token::End`] at the end of the text.
    pub fn next_token(&mut self) -> Result<Lexed, CompileError> {
        self.skip_blanks_and_comments();
        let at = self.pos;
        let rest = &self.text.as_bytes()[at..];
        let Some(&first) = rest.first() else {
            return Ok(Lexed {
                token: Token::End,
                at,
            });
        };
        let (token, len) = match first {
            b'\'' => string_literal(&self.text[at..]).ok_or(CompileError::Lexical {
                at,
                what: "an unterminated string literal",
            })?,
            b'0'..=b'9' | b'.' => number(rest).ok_or(CompileError::Lexical {
                at,
                what: "a '.' that starts no number",
            })?,
            b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'$' => word(rest),
            _ => operator(rest).ok_or(CompileError::Lexical {
                at,
                what: "a character that starts no token",
            })?,
        };
        self.pos += len;
        Ok(Lexed { token, at })
    }

    fn skip_blanks_and_comments(&mut self) {
        loop {
            let rest = &self.text.as_bytes()[self.pos..];
            let skipped = match rest {
                [b' ' | b'\t' | b'\n' | b'\r' | b'\x0c', ..] => 1,
                [b'-', b'-', tail @ ..] => match line_comment_end(tail) {
                    Some(len) => 2 + len,
                    // A `--` the text ends in without a line break is no comment (JavaCC's
                    // rule needs the break): it is two minus signs.
                    None => return,
                },
                [b'/', b'*', tail @ ..] => match find(tail, b"*/") {
                    Some(i) => 2 + i + 2,
                    None => return,
                },
                _ => return,
            };
            self.pos += skipped;
        }
    }
}

/// Length of a line comment's remainder through its line break ("\n", "\r" or "\r\n").
fn line_comment_end(tail: &[u8]) -> Option<usize> {
    let i = tail.iter().position(|&b| b == b'\n' || b == b'\r')?;
    let crlf = tail[i] == b'\r' && tail.get(i + 1) == Some(&b'\n');
    Some(i + 1 + usize::from(crlf))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `'...'` with `''` for a quote inside; the longest such literal.
fn string_literal(text: &str) -> Option<(Token, usize)> {
    let mut value = String::new();
    let mut chars = text.char_indices().skip(1).peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().map(|&(_, n)| n) == Some('\'') {
                chars.next();
                value.push('\'');
                continue;
            }
            return Some((Token::Str(value), i + 1));
        }
        value.push(c);
    }
    None
}

fn digits(bytes: &[u8]) -> usize {
    bytes.iter().take_while(|b| b.is_ascii_digit()).count()
}

/// `E [+-] digits`, if there is one at the start.
fn exponent(bytes: &[u8]) -> usize {
    if !matches!(bytes.first(), Some(b'e' | b'E')) {
        return 0;
    }
    let sign = usize::from(matches!(bytes.get(1), Some(b'+' | b'-')));
    match digits(&bytes[1 + sign..]) {
        0 => 0,
        n => 1 + sign + n,
    }
}

/// The longer of the decimal and the floating-point literal at the start (`None` for a lone
/// `.`).
fn number(bytes: &[u8]) -> Option<(Token, usize)> {
    let int = digits(bytes);
    let decimal = match bytes.first() {
        Some(b'0') => 1,
        Some(b'1'..=b'9') => int + usize::from(matches!(bytes.get(int), Some(b'l' | b'L'))),
        _ => 0,
    };
    let float = if bytes.get(int) == Some(&b'.') {
        let frac = digits(&bytes[int + 1..]);
        if int == 0 && frac == 0 {
            0
        } else {
            let end = int + 1 + frac;
            end + exponent(&bytes[end..])
        }
    } else {
        match exponent(&bytes[int..]) {
            0 => 0,
            e if int > 0 => int + e,
            _ => 0,
        }
    };
    let text = |len| String::from_utf8_lossy(&bytes[..len]).into_owned();
    if float > decimal {
        Some((Token::Float(text(float)), float))
    } else if decimal > 0 {
        Some((Token::Decimal(text(decimal)), decimal))
    } else {
        None
    }
}

/// An identifier, or the keyword it spells.
fn word(bytes: &[u8]) -> (Token, usize) {
    let len = bytes
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'$')
        .count();
    let text = std::str::from_utf8(&bytes[..len]).expect("ASCII");
    let token = KEYWORDS
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(text))
        .map_or_else(|| Token::Id(text.to_owned()), |(_, t)| t.clone());
    (token, len)
}

fn operator(bytes: &[u8]) -> Option<(Token, usize)> {
    Some(match bytes {
        [b'<', b'>', ..] => (Token::Ne, 2),
        [b'>', b'=', ..] => (Token::Ge, 2),
        [b'<', b'=', ..] => (Token::Le, 2),
        [b'=', ..] => (Token::Eq, 1),
        [b'>', ..] => (Token::Gt, 1),
        [b'<', ..] => (Token::Lt, 1),
        [b'(', ..] => (Token::Open, 1),
        [b',', ..] => (Token::Comma, 1),
        [b')', ..] => (Token::Close, 1),
        [b'+', ..] => (Token::Plus, 1),
        [b'-', ..] => (Token::Minus, 1),
        _ => return None,
    })
}
