//! Apache RocketMQ's `SelectorParser.jj` grammar, production for production, with the checks
//! its `create*` factories make while the tree is built (they throw, so the selector does
//! not compile):
//!
//! ```text
//! selector   := or                       (text after a complete expression is ignored)
//! or         := and (OR and)*
//! and        := equality (AND equality)*
//! equality   := comparison ( '=' comparison | '<>' comparison | IS NULL | IS NOT NULL )*
//! comparison := unary ( ('>'|'>='|'<'|'<=') unary
//!                     | [NOT] (CONTAINS|STARTSWITH|ENDSWITH) string
//!                     | [NOT] BETWEEN unary AND unary
//!                     | [NOT] IN '(' string (',' string)* ')' )*
//! unary      := '+' unary | '-' unary | NOT unary | primary
//! primary    := literal | identifier | '(' or ')'
//! ```
//!
//! NOT binds tighter than comparisons here, as in Apache: `NOT a = 1` is `(NOT a) = 1`.

use super::expr::{Expr, Literal, OrderOp, TextOp};
use super::lexer::{Lexed, Lexer, Token};
use super::{CompileError, EXPRESSION_DEPTH_MAX, IN_LIST_MAX, NESTING_DEPTH_MAX};
use std::collections::VecDeque;

/// A subtree and its depth (so no tree deeper than the limit is ever built: evaluating or
/// dropping one is recursive).
struct Node {
    expr: Expr,
    depth: usize,
}

pub fn parse(text: &str) -> Result<Expr, CompileError> {
    let mut parser = Parser {
        lexer: Lexer::new(text),
        ahead: VecDeque::new(),
        nesting: 0,
    };
    let tree = parser.or()?;
    Ok(as_boolean(tree)?.expr)
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    ahead: VecDeque<Lexed>,
    nesting: usize,
}

fn node(expr: Expr, children: &[usize]) -> Result<Node, CompileError> {
    let depth = 1 + children.iter().copied().max().unwrap_or(0);
    if depth > EXPRESSION_DEPTH_MAX {
        return Err(CompileError::TooDeep {
            max: EXPRESSION_DEPTH_MAX,
        });
    }
    Ok(Node { expr, depth })
}

fn literal(literal: Literal) -> Node {
    Node {
        expr: Expr::Literal(literal),
        depth: 1,
    }
}

/// `asBooleanExpression`: a condition, or a property cast to one.
fn as_boolean(tree: Node) -> Result<Node, CompileError> {
    if tree.expr.is_boolean() {
        return Ok(tree);
    }
    if matches!(tree.expr, Expr::Property(_)) {
        return node(Expr::BoolCast(Box::new(tree.expr)), &[tree.depth]);
    }
    Err(CompileError::NotACondition)
}

/// `checkLessThanOperand`: a literal must be a number; a condition cannot be ordered.
fn check_orderable(tree: &Node) -> Result<(), CompileError> {
    let orderable = match &tree.expr {
        Expr::Literal(l) => matches!(l, Literal::Int(_) | Literal::Long(_) | Literal::Double(_)),
        other => !other.is_boolean(),
    };
    orderable.then_some(()).ok_or(CompileError::NotOrderable)
}

fn literal_of(tree: &Node) -> Option<&Literal> {
    match &tree.expr {
        Expr::Literal(l) => Some(l),
        _ => None,
    }
}

fn order(op: OrderOp, left: Node, right: Node) -> Result<Node, CompileError> {
    check_orderable(&left)?;
    check_orderable(&right)?;
    let depths = [left.depth, right.depth];
    node(
        Expr::Order(op, Box::new(left.expr), Box::new(right.expr)),
        &depths,
    )
}

/// `createEqual`: no NULL literal on either side, and a boolean literal on the left only
/// against another boolean literal.
fn equal(left: Node, right: Node) -> Result<Node, CompileError> {
    if literal_of(&left) == Some(&Literal::Null) || literal_of(&right) == Some(&Literal::Null) {
        return Err(CompileError::NullComparison);
    }
    if let (Some(Literal::Bool(_)), Some(r)) = (literal_of(&left), literal_of(&right)) {
        if !matches!(r, Literal::Bool(_)) {
            return Err(CompileError::BooleanComparison);
        }
    }
    equal_unchecked(left, right)
}

fn equal_unchecked(left: Node, right: Node) -> Result<Node, CompileError> {
    let depths = [left.depth, right.depth];
    node(
        Expr::Equal(Box::new(left.expr), Box::new(right.expr)),
        &depths,
    )
}

fn not(tree: Node) -> Result<Node, CompileError> {
    let depth = tree.depth;
    node(Expr::Not(Box::new(tree.expr)), &[depth])
}

fn is_null(tree: Node) -> Result<Node, CompileError> {
    equal_unchecked(tree, literal(Literal::Null))
}

/// `createBetween` refuses two literal bounds in the wrong order (or null); both forms check
/// their operands as the comparisons they stand for.
fn between(value: Node, low: Node, high: Node, negated: bool) -> Result<Node, CompileError> {
    if let (false, Some(l), Some(h)) = (negated, literal_of(&low), literal_of(&high)) {
        if *l == Literal::Null || *h == Literal::Null {
            return Err(CompileError::BetweenBounds);
        }
        let ordered = super::value::compare(h.value(), l.value()).map(|o| o.is_ge());
        if ordered != Ok(true) {
            return Err(CompileError::BetweenBounds);
        }
    }
    for operand in [&value, &low, &high] {
        check_orderable(operand)?;
    }
    let depths = [value.depth, low.depth, high.depth];
    let expr = Expr::Between {
        value: Box::new(value.expr),
        low: Box::new(low.expr),
        high: Box::new(high.expr),
        negated,
    };
    // The tree Apache builds is one level deeper (a logic node over two comparisons).
    let built = node(expr, &depths)?;
    node(built.expr, &[built.depth])
}

impl Parser<'_> {
    fn peek(&mut self, n: usize) -> Result<&Token, CompileError> {
        while self.ahead.len() <= n {
            let next = self.lexer.next_token()?;
            self.ahead.push_back(next);
        }
        Ok(&self.ahead[n].token)
    }

    fn take(&mut self) -> Result<Lexed, CompileError> {
        self.peek(0)?;
        Ok(self.ahead.pop_front().expect("peeked"))
    }

    fn expect(&mut self, wanted: Token, what: &'static str) -> Result<(), CompileError> {
        let next = self.take()?;
        if next.token == wanted {
            Ok(())
        } else {
            Err(unexpected(next, what))
        }
    }

    fn or(&mut self) -> Result<Node, CompileError> {
        self.logic_chain(Token::Or, Self::and, Expr::Or)
    }

    fn and(&mut self) -> Result<Node, CompileError> {
        self.logic_chain(Token::And, Self::equality, Expr::And)
    }

    /// `operand (op operand)*`, folded to the left, every operand a condition.
    fn logic_chain(
        &mut self,
        op: Token,
        operand: fn(&mut Self) -> Result<Node, CompileError>,
        make: fn(Box<Expr>, Box<Expr>) -> Expr,
    ) -> Result<Node, CompileError> {
        let mut left = operand(self)?;
        while *self.peek(0)? == op {
            self.take()?;
            let right = as_boolean(operand(self)?)?;
            let left_ = as_boolean(left)?;
            let depths = [left_.depth, right.depth];
            left = node(make(Box::new(left_.expr), Box::new(right.expr)), &depths)?;
        }
        Ok(left)
    }

    fn equality(&mut self) -> Result<Node, CompileError> {
        let mut left = self.comparison()?;
        loop {
            left = match self.peek(0)? {
                Token::Eq => {
                    self.take()?;
                    equal(left, self.comparison()?)?
                }
                Token::Ne => {
                    self.take()?;
                    not(equal(left, self.comparison()?)?)?
                }
                Token::Is => {
                    self.take()?;
                    if *self.peek(0)? == Token::Null {
                        self.take()?;
                        is_null(left)?
                    } else {
                        self.expect(Token::Not, "NULL or NOT NULL after IS")?;
                        self.expect(Token::Null, "NULL after IS NOT")?;
                        not(is_null(left)?)?
                    }
                }
                _ => return Ok(left),
            };
        }
    }

    fn comparison(&mut self) -> Result<Node, CompileError> {
        let mut left = self.unary()?;
        loop {
            let op = match self.peek(0)? {
                Token::Gt => Some(OrderOp::Gt),
                Token::Ge => Some(OrderOp::Ge),
                Token::Lt => Some(OrderOp::Lt),
                Token::Le => Some(OrderOp::Le),
                _ => None,
            };
            if let Some(op) = op {
                self.take()?;
                left = order(op, left, self.unary()?)?;
                continue;
            }
            let negated = *self.peek(0)? == Token::Not;
            let keyword = self.peek(usize::from(negated))?.clone();
            let text_op = match keyword {
                Token::Contains => Some(TextOp::Contains),
                Token::StartsWith => Some(TextOp::StartsWith),
                Token::EndsWith => Some(TextOp::EndsWith),
                _ => None,
            };
            let known = text_op.is_some() || matches!(keyword, Token::Between | Token::In);
            if !known {
                if negated {
                    // Apache enters the loop on NOT and finds no NOT-form to continue it.
                    return Err(unexpected(
                        self.take()?,
                        "CONTAINS, STARTSWITH, ENDSWITH, BETWEEN or IN after NOT",
                    ));
                }
                return Ok(left);
            }
            if negated {
                self.take()?;
            }
            self.take()?;
            left = match (text_op, keyword) {
                (Some(op), _) => {
                    let search = self.string()?;
                    let depth = left.depth;
                    let expr = Expr::Text {
                        op,
                        negated,
                        operand: Box::new(left.expr),
                        search,
                    };
                    node(expr, &[depth])?
                }
                (None, Token::Between) => {
                    let low = self.unary()?;
                    self.expect(Token::And, "AND between the bounds of BETWEEN")?;
                    between(left, low, self.unary()?, negated)?
                }
                _ => self.in_list(left, negated)?,
            };
        }
    }

    fn in_list(&mut self, left: Node, negated: bool) -> Result<Node, CompileError> {
        self.expect(Token::Open, "( after IN")?;
        let mut list = vec![self.string()?];
        while *self.peek(0)? == Token::Comma {
            self.take()?;
            if list.len() == IN_LIST_MAX {
                return Err(CompileError::InListTooLong { max: IN_LIST_MAX });
            }
            list.push(self.string()?);
        }
        self.expect(Token::Close, ") closing the IN list")?;
        let Expr::Property(property) = left.expr else {
            return Err(CompileError::InNeedsProperty);
        };
        list.sort_unstable();
        list.dedup();
        let expr = Expr::In {
            property,
            list,
            negated,
        };
        node(expr, &[left.depth])
    }

    fn string(&mut self) -> Result<String, CompileError> {
        match self.take()? {
            Lexed {
                token: Token::Str(s),
                ..
            } => Ok(s),
            other => Err(unexpected(other, "a string literal")),
        }
    }

    fn unary(&mut self) -> Result<Node, CompileError> {
        self.nesting += 1;
        if self.nesting > NESTING_DEPTH_MAX {
            return Err(CompileError::TooDeep {
                max: NESTING_DEPTH_MAX,
            });
        }
        let parsed = self.unary_inner();
        self.nesting -= 1;
        parsed
    }

    fn unary_inner(&mut self) -> Result<Node, CompileError> {
        match self.peek(0)? {
            Token::Plus => {
                self.take()?;
                self.unary()
            }
            Token::Minus => {
                self.take()?;
                let inner = self.unary()?;
                node(Expr::Negate(Box::new(inner.expr)), &[inner.depth])
            }
            Token::Not => {
                self.take()?;
                not(as_boolean(self.unary()?)?)
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<Node, CompileError> {
        let next = self.take()?;
        Ok(match next.token {
            Token::Str(s) => literal(Literal::Str(s)),
            Token::Decimal(text) => literal(decimal(&text)?),
            Token::Float(text) => literal(float(&text)?),
            Token::True => literal(Literal::Bool(true)),
            Token::False => literal(Literal::Bool(false)),
            Token::Null => literal(Literal::Null),
            Token::Id(name) => Node {
                expr: Expr::Property(name),
                depth: 1,
            },
            Token::Open => {
                let inner = self.or()?;
                self.expect(Token::Close, "a closing parenthesis")?;
                inner
            }
            _ => return Err(unexpected(next, "a literal, a property or (")),
        })
    }
}

fn unexpected(found: Lexed, expected: &'static str) -> CompileError {
    CompileError::Syntax {
        at: found.at,
        found: format!("{:?}", found.token),
        expected,
    }
}

/// `createFromDecimal`: a long, an int when it fits one.
fn decimal(text: &str) -> Result<Literal, CompileError> {
    let digits = text.strip_suffix(['l', 'L']).unwrap_or(text);
    let value: i64 = digits
        .parse()
        .map_err(|_| CompileError::NumberOutOfRange(text.to_owned()))?;
    Ok(i32::try_from(value).map_or(Literal::Long(value), Literal::Int))
}

/// `createFloat`: finite and at least the smallest positive double, so also not 0.0
/// (Apache compares with `Double.MIN_VALUE`, which is positive).
fn float(text: &str) -> Result<Literal, CompileError> {
    let value: f64 = text
        .parse()
        .map_err(|_| CompileError::NumberOutOfRange(text.to_owned()))?;
    if value > f64::MAX || value < f64::from_bits(1) {
        return Err(CompileError::NumberOutOfRange(text.to_owned()));
    }
    Ok(Literal::Double(value))
}
