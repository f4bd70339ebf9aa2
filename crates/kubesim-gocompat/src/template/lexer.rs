//! Splitting a template into text and actions, and actions into tokens.

use super::TemplateError;

/// A piece of the template: literal text or the inside of `{{ }}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Text(String),
    /// The action's tokens and the line it starts on.
    Action(Vec<Token>, usize),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    /// `.a.b` (empty path: `.` itself).
    Field(Vec<String>),
    /// `$x.a.b` (name without `$`; `$` alone is "").
    Var(String, Vec<String>),
    Ident(String),
    Str(String),
    Int(i64),
    Float(f64),
    Pipe,
    Open,
    /// `)` followed by `.a.b` field steps, if any.
    Close(Vec<String>),
    Declare,
    Assign,
    Comma,
}

fn err(line: usize, msg: impl std::fmt::Display) -> TemplateError {
    TemplateError(format!("line {line}: {msg}"))
}

/// Splits the source into pieces, applying `{{-` and `-}}` trimming and
/// dropping comments.
pub fn split(src: &str) -> Result<Vec<Piece>, TemplateError> {
    let mut pieces = Vec::new();
    let mut rest = src;
    let mut line = 1;
    let mut trim_next = false;
    while !rest.is_empty() {
        let Some(open) = rest.find("{{") else {
            push_text(&mut pieces, rest, trim_next);
            break;
        };
        let mut text = &rest[..open];
        let after = &rest[open + 2..];
        let trim_left =
            after.starts_with("- ") || after.starts_with("-\t") || after.starts_with("-\n");
        if trim_left {
            text = text.trim_end();
        }
        push_text(&mut pieces, text, trim_next);
        line += rest[..open].matches('\n').count();
        let body_start = if trim_left { 1 } else { 0 };
        let body = &after[body_start..];
        let close = find_close(body).ok_or_else(|| err(line, "unclosed action"))?;
        let mut inner = &body[..close];
        let trim_right = inner.ends_with(" -") || inner.ends_with("\t-") || inner.ends_with("\n-");
        if trim_right {
            inner = &inner[..inner.len() - 1];
        }
        let consumed = open + 2 + body_start + close + 2;
        let trimmed = inner.trim();
        if trimmed.starts_with("/*") {
            if !trimmed.ends_with("*/") {
                return Err(err(line, "unclosed comment"));
            }
        } else {
            pieces.push(Piece::Action(tokens(inner, line)?, line));
        }
        line += rest[open..consumed].matches('\n').count();
        rest = &rest[consumed..];
        trim_next = trim_right;
    }
    Ok(pieces)
}

fn push_text(pieces: &mut Vec<Piece>, text: &str, trim_start: bool) {
    let t = if trim_start { text.trim_start() } else { text };
    if !t.is_empty() {
        pieces.push(Piece::Text(t.to_string()));
    }
}

/// The end of an action: the first `}}` outside string literals.
fn find_close(body: &str) -> Option<usize> {
    let b = body.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        match quote {
            Some(q) => {
                if b[i] == b'\\' && q == b'"' {
                    i += 1;
                } else if b[i] == q {
                    quote = None;
                }
            }
            None => {
                if b[i] == b'"' || b[i] == b'`' {
                    quote = Some(b[i]);
                } else if b[i] == b'}' && b.get(i + 1) == Some(&b'}') {
                    return Some(i);
                } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    // A comment runs to `*/` whatever it holds.
                    let end = body[i..].find("*/")?;
                    i += end + 1;
                }
            }
        }
        i += 1;
    }
    None
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `.a.b.c` starting at a dot: the names, and the bytes consumed.
fn field_chain(s: &str) -> (Vec<String>, usize) {
    let mut names = Vec::new();
    let mut i = 0;
    let b = s.as_bytes();
    while i < b.len() && b[i] == b'.' {
        let start = i + 1;
        let len = s[start..]
            .chars()
            .take_while(|c| is_ident(*c))
            .map(char::len_utf8)
            .sum::<usize>();
        if len == 0 {
            // A lone dot ends the chain (it is `.` itself when first).
            if names.is_empty() {
                i += 1;
            }
            break;
        }
        names.push(s[start..start + len].to_string());
        i = start + len;
    }
    (names, i)
}

fn tokens(src: &str, line: usize) -> Result<Vec<Token>, TemplateError> {
    let mut out = Vec::new();
    let mut i = 0;
    let b = src.as_bytes();
    while i < b.len() {
        let c = src[i..].chars().next().unwrap_or(' ');
        match c {
            c if c.is_whitespace() => i += c.len_utf8(),
            '|' => {
                out.push(Token::Pipe);
                i += 1;
            }
            '(' => {
                out.push(Token::Open);
                i += 1;
            }
            ')' => {
                let (names, n) = field_chain(&src[i + 1..]);
                out.push(Token::Close(names));
                i += 1 + n;
            }
            ',' => {
                out.push(Token::Comma);
                i += 1;
            }
            ':' if b.get(i + 1) == Some(&b'=') => {
                out.push(Token::Declare);
                i += 2;
            }
            '=' => {
                out.push(Token::Assign);
                i += 1;
            }
            '.' if b.get(i + 1).is_some_and(|d| d.is_ascii_digit()) => {
                let (t, n) = number(&src[i..], line)?;
                out.push(t);
                i += n;
            }
            '.' => {
                let (names, n) = field_chain(&src[i..]);
                out.push(Token::Field(names));
                i += n.max(1);
            }
            '$' => {
                let len = src[i + 1..]
                    .chars()
                    .take_while(|c| is_ident(*c))
                    .map(char::len_utf8)
                    .sum::<usize>();
                let name = src[i + 1..i + 1 + len].to_string();
                let (names, n) = field_chain(&src[i + 1 + len..]);
                out.push(Token::Var(name, names));
                i += 1 + len + n;
            }
            '"' => {
                let (s, n) = quoted(&src[i..], line)?;
                out.push(Token::Str(s));
                i += n;
            }
            '`' => {
                let end = src[i + 1..]
                    .find('`')
                    .ok_or_else(|| err(line, "unterminated raw string"))?;
                out.push(Token::Str(src[i + 1..i + 1 + end].to_string()));
                i += end + 2;
            }
            '\'' => {
                let mut chars = src[i + 1..].chars();
                let ch = chars
                    .next()
                    .ok_or_else(|| err(line, "bad character constant"))?;
                if chars.next() != Some('\'') {
                    return Err(err(line, "bad character constant"));
                }
                out.push(Token::Int(ch as i64));
                i += 2 + ch.len_utf8();
            }
            c if c.is_ascii_digit()
                || ((c == '-' || c == '+')
                    && b.get(i + 1)
                        .is_some_and(|d| d.is_ascii_digit() || *d == b'.')) =>
            {
                let (t, n) = number(&src[i..], line)?;
                out.push(t);
                i += n;
            }
            c if is_ident(c) => {
                let len = src[i..]
                    .chars()
                    .take_while(|c| is_ident(*c))
                    .map(char::len_utf8)
                    .sum::<usize>();
                out.push(Token::Ident(src[i..i + len].to_string()));
                i += len;
            }
            other => return Err(err(line, format!("unexpected {other:?} in action"))),
        }
    }
    Ok(out)
}

fn quoted(s: &str, line: usize) -> Result<(String, usize), TemplateError> {
    let mut out = String::new();
    let mut chars = s.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, i + 1)),
            '\\' => {
                let (_, e) = chars
                    .next()
                    .ok_or_else(|| err(line, "unterminated string"))?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    '\\' => out.push('\\'),
                    '"' => out.push('"'),
                    '\'' => out.push('\''),
                    'u' => {
                        let hex: String = (0..4)
                            .filter_map(|_| chars.next().map(|(_, c)| c))
                            .collect();
                        let ch = u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or_else(|| err(line, "bad \\u escape"))?;
                        out.push(ch);
                    }
                    other => return Err(err(line, format!("unknown escape \\{other}"))),
                }
            }
            '\n' => return Err(err(line, "newline in string")),
            c => out.push(c),
        }
    }
    Err(err(line, "unterminated string"))
}

fn number(s: &str, line: usize) -> Result<(Token, usize), TemplateError> {
    let len = s
        .char_indices()
        .take_while(|(i, c)| {
            c.is_ascii_alphanumeric()
                || *c == '.'
                || *c == '_'
                || (*i == 0 && (*c == '-' || *c == '+'))
                || ((*c == '-' || *c == '+')
                    && s[..*i].ends_with(['e', 'E'])
                    && !s.starts_with("0x"))
        })
        .map(|(_, c)| c.len_utf8())
        .sum::<usize>();
    let text = s[..len].replace('_', "");
    let bad = || err(line, format!("bad number {:?}", &s[..len]));
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d.to_string()),
        None => (false, text.trim_start_matches('+').to_string()),
    };
    let int = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(o) = digits.strip_prefix("0o") {
        i64::from_str_radix(o, 8).ok()
    } else if let Some(b) = digits.strip_prefix("0b") {
        i64::from_str_radix(b, 2).ok()
    } else {
        digits.parse::<i64>().ok()
    };
    if let Some(v) = int {
        return Ok((Token::Int(if neg { -v } else { v }), len));
    }
    let f: f64 = digits.parse().map_err(|_| bad())?;
    Ok((Token::Float(if neg { -f } else { f }), len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_and_comments() {
        let p = split("a  {{- .x -}}  b {{/* c */}}d").unwrap();
        assert_eq!(
            p,
            vec![
                Piece::Text("a".into()),
                Piece::Action(vec![Token::Field(vec!["x".into()])], 1),
                Piece::Text("b ".into()),
                Piece::Text("d".into()),
            ]
        );
        // `{{-3}}` is the number -3, not a trim marker.
        assert_eq!(
            split("{{-3}}").unwrap(),
            vec![Piece::Action(vec![Token::Int(-3)], 1)]
        );
    }

    #[test]
    fn tokens_of_an_action() {
        let t = tokens(r#"$x := index .a "k\n" 1.5 | printf `%s` ($y.z).w"#, 1).unwrap();
        assert_eq!(
            t,
            vec![
                Token::Var("x".into(), vec![]),
                Token::Declare,
                Token::Ident("index".into()),
                Token::Field(vec!["a".into()]),
                Token::Str("k\n".into()),
                Token::Float(1.5),
                Token::Pipe,
                Token::Ident("printf".into()),
                Token::Str("%s".into()),
                Token::Open,
                Token::Var("y".into(), vec!["z".into()]),
                Token::Close(vec!["w".into()]),
            ]
        );
        assert_eq!(tokens(".", 1).unwrap(), vec![Token::Field(vec![])]);
        assert_eq!(
            tokens("0x1F -2", 1).unwrap(),
            vec![Token::Int(31), Token::Int(-2)]
        );
        assert!(split("{{ .a ").is_err());
        assert!(split("{{ \"abc }}").is_err());
    }
}
