//! The template's syntax tree: text, output actions and the control
//! structures, built from the lexer's pieces.

use std::collections::BTreeMap;

use super::lexer::{split, Piece, Token};
use super::TemplateError;

#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// `.a.b` (empty: `.`).
    Field(Vec<String>),
    /// `$x.a.b`.
    Var(String, Vec<String>),
    /// A function name.
    Func(String),
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Nil,
    /// `(pipeline).a.b`.
    Sub(Box<Pipeline>, Vec<String>),
}

/// `$a, $b := cmd | cmd`.
#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    pub vars: Vec<String>,
    /// `=` (assign existing) rather than `:=` (declare).
    pub assign: bool,
    pub cmds: Vec<Vec<Arg>>,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Text(String),
    Output(Pipeline),
    If {
        branches: Vec<(Pipeline, Vec<Node>)>,
        otherwise: Vec<Node>,
    },
    With {
        branches: Vec<(Pipeline, Vec<Node>)>,
        otherwise: Vec<Node>,
    },
    Range {
        pipe: Pipeline,
        body: Vec<Node>,
        otherwise: Vec<Node>,
    },
    Break,
    Continue,
    Template(String, Option<Pipeline>, usize),
}

#[derive(Debug)]
pub struct Parsed {
    pub root: Vec<Node>,
    pub defines: BTreeMap<String, Vec<Node>>,
}

fn err(line: usize, msg: impl std::fmt::Display) -> TemplateError {
    TemplateError(format!("line {line}: {msg}"))
}

pub fn parse(src: &str) -> Result<Parsed, TemplateError> {
    let pieces = split(src)?;
    let mut p = Parser {
        pieces,
        pos: 0,
        defines: BTreeMap::new(),
        range_depth: 0,
    };
    let (root, end) = p.list()?;
    if let Some((kw, line)) = end {
        return Err(err(line, format!("unexpected {{{{{kw}}}}}")));
    }
    Ok(Parsed {
        root,
        defines: p.defines,
    })
}

struct Parser {
    pieces: Vec<Piece>,
    pos: usize,
    defines: BTreeMap<String, Vec<Node>>,
    range_depth: usize,
}

/// What ended a list: `end`, `else` (with the tokens after it), or the
/// end of input (None).
type End = Option<(String, usize)>;

impl Parser {
    /// Nodes up to a closing keyword (returned, its tokens kept in
    /// `self.tail`).
    fn list(&mut self) -> Result<(Vec<Node>, End), TemplateError> {
        let mut nodes = Vec::new();
        while self.pos < self.pieces.len() {
            let piece = self.pieces[self.pos].clone();
            self.pos += 1;
            match piece {
                Piece::Text(t) => nodes.push(Node::Text(t)),
                Piece::Action(tokens, line) => {
                    let first = match tokens.first() {
                        Some(Token::Ident(k)) => k.as_str(),
                        None => return Err(err(line, "missing value for command")),
                        _ => "",
                    };
                    match first {
                        "end" | "else" => {
                            // Leave the tokens for the caller.
                            self.pos -= 1;
                            return Ok((nodes, Some((first.to_string(), line))));
                        }
                        "if" | "with" => nodes.push(self.conditional(first, &tokens[1..], line)?),
                        "range" => nodes.push(self.range(&tokens[1..], line)?),
                        "break" | "continue" => {
                            if self.range_depth == 0 {
                                return Err(err(line, format!("{first} outside range")));
                            }
                            nodes.push(if first == "break" {
                                Node::Break
                            } else {
                                Node::Continue
                            });
                        }
                        "define" => {
                            let name = match tokens.get(1) {
                                Some(Token::Str(s)) => s.clone(),
                                _ => return Err(err(line, "define needs a quoted name")),
                            };
                            let (body, end) = self.list()?;
                            self.expect_end(end, line, "define")?;
                            self.defines.insert(name, body);
                        }
                        "template" | "block" => {
                            let name = match tokens.get(1) {
                                Some(Token::Str(s)) => s.clone(),
                                _ => return Err(err(line, format!("{first} needs a quoted name"))),
                            };
                            let pipe = if tokens.len() > 2 {
                                Some(pipeline(&tokens[2..], line)?)
                            } else {
                                None
                            };
                            if first == "block" {
                                let (body, end) = self.list()?;
                                self.expect_end(end, line, "block")?;
                                self.defines.entry(name.clone()).or_insert(body);
                            }
                            nodes.push(Node::Template(name, pipe, line));
                        }
                        _ => nodes.push(Node::Output(pipeline(&tokens, line)?)),
                    }
                }
            }
        }
        Ok((nodes, None))
    }

    /// Consumes an `{{end}}` that `list` stopped at.
    fn expect_end(&mut self, end: End, line: usize, what: &str) -> Result<(), TemplateError> {
        match end {
            Some((k, _)) if k == "end" => {
                self.pos += 1;
                Ok(())
            }
            Some((k, l)) => Err(err(l, format!("unexpected {{{{{k}}}}} in {what}"))),
            None => Err(err(
                line,
                format!("unexpected EOF: {what} has no {{{{end}}}}"),
            )),
        }
    }

    /// The tokens of the action `list` stopped at.
    fn stop_tokens(&self) -> Vec<Token> {
        match &self.pieces[self.pos] {
            Piece::Action(t, _) => t.clone(),
            Piece::Text(_) => Vec::new(),
        }
    }

    fn conditional(
        &mut self,
        kw: &str,
        tokens: &[Token],
        line: usize,
    ) -> Result<Node, TemplateError> {
        let mut branches = vec![(pipeline(tokens, line)?, Vec::new())];
        let mut otherwise = Vec::new();
        loop {
            let (body, end) = self.list()?;
            let Some((stop, stop_line)) = end else {
                return Err(err(
                    line,
                    format!("unexpected EOF: {kw} has no {{{{end}}}}"),
                ));
            };
            if let Some(last) = branches.last_mut() {
                last.1 = body;
            }
            let toks = self.stop_tokens();
            self.pos += 1;
            if stop == "end" {
                break;
            }
            // `else`, `else if ...`, `else with ...`.
            match toks.get(1) {
                Some(Token::Ident(k)) if k == kw => {
                    branches.push((pipeline(&toks[2..], stop_line)?, Vec::new()));
                }
                None => {
                    let (body, end) = self.list()?;
                    otherwise = body;
                    self.expect_end(end, line, kw)?;
                    break;
                }
                _ => return Err(err(stop_line, "bad else")),
            }
        }
        Ok(if kw == "if" {
            Node::If {
                branches,
                otherwise,
            }
        } else {
            Node::With {
                branches,
                otherwise,
            }
        })
    }

    fn range(&mut self, tokens: &[Token], line: usize) -> Result<Node, TemplateError> {
        let pipe = pipeline(tokens, line)?;
        if pipe.vars.len() > 2 || pipe.assign && !pipe.vars.is_empty() {
            return Err(err(line, "range can declare at most two variables"));
        }
        self.range_depth += 1;
        let (body, end) = self.list()?;
        self.range_depth -= 1;
        let mut otherwise = Vec::new();
        match end {
            Some((k, _)) if k == "else" => {
                self.pos += 1;
                let (b, end) = self.list()?;
                otherwise = b;
                self.expect_end(end, line, "range")?;
            }
            end => self.expect_end(end, line, "range")?,
        }
        Ok(Node::Range {
            pipe,
            body,
            otherwise,
        })
    }
}

/// A pipeline, with its variable declaration if any.
pub fn pipeline(tokens: &[Token], line: usize) -> Result<Pipeline, TemplateError> {
    let mut vars = Vec::new();
    let mut assign = false;
    let mut rest = tokens;
    // `$x :=`, `$x =`, `$i, $v :=`
    let decl_at = tokens
        .iter()
        .position(|t| matches!(t, Token::Declare | Token::Assign));
    if let Some(at) = decl_at {
        let lhs = &tokens[..at];
        let ok = !lhs.is_empty()
            && lhs.iter().enumerate().all(|(i, t)| match (i % 2, t) {
                (0, Token::Var(_, f)) => f.is_empty(),
                (1, Token::Comma) => true,
                _ => false,
            });
        if ok {
            for t in lhs {
                if let Token::Var(n, _) = t {
                    vars.push(n.clone());
                }
            }
            assign = matches!(tokens[at], Token::Assign);
            rest = &tokens[at + 1..];
        }
    }
    let (cmds, used) = commands(rest, line, false)?;
    if used != rest.len() {
        return Err(err(line, "unexpected ) in action"));
    }
    if cmds.is_empty() {
        return Err(err(line, "missing value for command"));
    }
    Ok(Pipeline {
        vars,
        assign,
        cmds,
        line,
    })
}

/// Commands separated by `|`, up to a closing paren when `nested`.
fn commands(
    tokens: &[Token],
    line: usize,
    nested: bool,
) -> Result<(Vec<Vec<Arg>>, usize), TemplateError> {
    let mut cmds = Vec::new();
    let mut cur: Vec<Arg> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Pipe => {
                if cur.is_empty() {
                    return Err(err(line, "missing command before |"));
                }
                cmds.push(std::mem::take(&mut cur));
            }
            Token::Close(_) if nested => break,
            Token::Close(_) => return Err(err(line, "unexpected )")),
            Token::Open => {
                let (inner, used) = commands(&tokens[i + 1..], line, true)?;
                let close = tokens.get(i + 1 + used);
                let Some(Token::Close(fields)) = close else {
                    return Err(err(line, "unclosed ("));
                };
                if inner.is_empty() {
                    return Err(err(line, "empty ()"));
                }
                cur.push(Arg::Sub(
                    Box::new(Pipeline {
                        vars: Vec::new(),
                        assign: false,
                        cmds: inner,
                        line,
                    }),
                    fields.clone(),
                ));
                i += used + 1;
            }
            Token::Field(f) => cur.push(Arg::Field(f.clone())),
            Token::Var(n, f) => cur.push(Arg::Var(n.clone(), f.clone())),
            Token::Ident(n) => cur.push(match n.as_str() {
                "true" => Arg::Bool(true),
                "false" => Arg::Bool(false),
                "nil" => Arg::Nil,
                _ => Arg::Func(n.clone()),
            }),
            Token::Str(s) => cur.push(Arg::Str(s.clone())),
            Token::Int(v) => cur.push(Arg::Int(*v)),
            Token::Float(v) => cur.push(Arg::Float(*v)),
            Token::Declare | Token::Assign | Token::Comma => {
                return Err(err(line, "unexpected declaration in command"))
            }
        }
        i += 1;
    }
    if !cur.is_empty() {
        cmds.push(cur);
    } else if !cmds.is_empty() {
        return Err(err(line, "missing command after |"));
    }
    Ok((cmds, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structures_nest() {
        let p = parse("{{ if .a }}A{{ else if .b }}B{{ else }}C{{ end }}{{ range $i, $v := .l }}{{ $v }}{{ else }}none{{ end }}").unwrap();
        assert!(
            matches!(&p.root[0], Node::If { branches, otherwise } if branches.len() == 2 && otherwise.len() == 1)
        );
        assert!(
            matches!(&p.root[1], Node::Range { pipe, otherwise, .. } if pipe.vars == ["i", "v"] && otherwise.len() == 1)
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("a\n{{ if .x }}\nb").unwrap_err();
        assert!(e.0.contains("line 2") && e.0.contains("end"), "{e}");
        assert!(parse("{{ end }}").is_err());
        assert!(parse("{{ break }}").is_err());
        assert!(parse("{{ (.a }}").is_err());
        assert!(parse("{{ .a | }}").is_err());
        assert!(parse("{{ }}").is_err());
    }
}
