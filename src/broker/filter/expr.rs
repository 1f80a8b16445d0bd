//! A compiled selector's tree and its evaluation, node for node Apache's expression classes
//! (`LogicExpression`, `ComparisonExpression`, `UnaryExpression`, `UnaryInExpression`):
//! three-valued logic (null for "unknown"), a property that is missing is null, and any
//! evaluation error makes the whole selector fail (Apache throws out of `evaluate`).

use super::value::{compare, order, EvalError, Value};
use std::cmp::Ordering;

/// A literal, owned by the tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(String),
}

impl Literal {
    pub fn value(&self) -> Value<'_> {
        match self {
            Literal::Null => Value::Null,
            Literal::Bool(b) => Value::Bool(*b),
            Literal::Int(i) => Value::Int(*i),
            Literal::Long(l) => Value::Long(*l),
            Literal::Double(d) => Value::Double(*d),
            Literal::Str(s) => Value::Str(s),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderOp {
    Gt,
    Ge,
    Lt,
    Le,
}

impl OrderOp {
    fn holds(self, ordering: Ordering) -> bool {
        match self {
            OrderOp::Gt => ordering.is_gt(),
            OrderOp::Ge => ordering.is_ge(),
            OrderOp::Lt => ordering.is_lt(),
            OrderOp::Le => ordering.is_le(),
        }
    }
}

/// The 5.x string operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextOp {
    Contains,
    StartsWith,
    EndsWith,
}

#[derive(Debug)]
pub enum Expr {
    Literal(Literal),
    Property(String),
    Negate(Box<Expr>),
    Not(Box<Expr>),
    /// A property used as a condition: true only if it is the boolean true (a property,
    /// being a string, never is).
    BoolCast(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    /// `=`, and `IS NULL` as `= NULL` (which `=` itself refuses at compile time).
    Equal(Box<Expr>, Box<Expr>),
    Order(OrderOp, Box<Expr>, Box<Expr>),
    /// `v BETWEEN low AND high` is `v >= low AND v <= high`, `NOT BETWEEN` is
    /// `v < low OR v > high`; `value` is evaluated once.
    Between {
        value: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    Text {
        op: TextOp,
        negated: bool,
        operand: Box<Expr>,
        search: String,
    },
    /// `list` sorted, for binary search.
    In {
        property: String,
        list: Vec<String>,
        negated: bool,
    },
}

/// Where property values come from.
pub trait Properties {
    fn get(&self, name: &str) -> Option<&str>;
}

type Eval<'a> = Result<Value<'a>, EvalError>;

fn truth<'a>(b: Option<bool>) -> Value<'a> {
    b.map_or(Value::Null, Value::Bool)
}

/// A boolean child's value: the tree only puts boolean expressions under logic nodes.
fn as_bool(value: Value<'_>) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(b),
        _ => None,
    }
}

impl Expr {
    /// Apache's `BooleanExpression`: what may stand as a condition.
    pub fn is_boolean(&self) -> bool {
        match self {
            Expr::Literal(literal) => matches!(literal, Literal::Null | Literal::Bool(_)),
            Expr::Property(_) | Expr::Negate(_) => false,
            _ => true,
        }
    }

    pub fn evaluate<'a>(&'a self, props: &'a dyn Properties) -> Eval<'a> {
        Ok(match self {
            Expr::Literal(literal) => literal.value(),
            Expr::Property(name) => props.get(name).map_or(Value::Null, Value::Str),
            Expr::Negate(inner) => match inner.evaluate(props)? {
                Value::Int(i) => Value::Int(i.wrapping_neg()),
                Value::Long(l) => Value::Long(l.wrapping_neg()),
                Value::Double(d) => Value::Double(-d),
                _ => Value::Null,
            },
            Expr::Not(inner) => truth(as_bool(inner.evaluate(props)?).map(|b| !b)),
            Expr::BoolCast(inner) => match inner.evaluate(props)? {
                Value::Null => Value::Null,
                value => Value::Bool(value == Value::Bool(true)),
            },
            Expr::And(left, right) => and(
                || Ok(as_bool(left.evaluate(props)?)),
                || Ok(as_bool(right.evaluate(props)?)),
            )?,
            Expr::Or(left, right) => or(
                || Ok(as_bool(left.evaluate(props)?)),
                || Ok(as_bool(right.evaluate(props)?)),
            )?,
            Expr::Equal(left, right) => equal(left.evaluate(props)?, right.evaluate(props)?)?,
            Expr::Order(op, left, right) => truth(ordered(*op, left.evaluate(props)?, || {
                right.evaluate(props)
            })?),
            Expr::Between {
                value,
                low,
                high,
                negated,
            } => between(value.evaluate(props)?, low, high, *negated, props)?,
            Expr::Text {
                op,
                negated,
                operand,
                search,
            } => Value::Bool(text_matches(*op, *negated, operand, search, props)?),
            Expr::In {
                property,
                list,
                negated,
            } => match props.get(property) {
                None => Value::Null,
                Some(value) => {
                    Value::Bool(list.binary_search_by(|s| s.as_str().cmp(value)).is_ok() ^ negated)
                }
            },
        })
    }
}

type Lazy<'f> = &'f dyn Fn() -> Result<Option<bool>, EvalError>;

/// `LogicExpression.createAND`: false wins, then unknown; the right side is skipped when
/// the left is false.
fn and<'a>(
    left: impl Fn() -> Result<Option<bool>, EvalError>,
    right: impl Fn() -> Result<Option<bool>, EvalError>,
) -> Eval<'a> {
    logic(&left, &right, false)
}

/// `LogicExpression.createOR`: true wins, then unknown.
fn or<'a>(
    left: impl Fn() -> Result<Option<bool>, EvalError>,
    right: impl Fn() -> Result<Option<bool>, EvalError>,
) -> Eval<'a> {
    logic(&left, &right, true)
}

fn logic<'a>(left: Lazy<'_>, right: Lazy<'_>, decisive: bool) -> Eval<'a> {
    let l = left()?;
    if l == Some(decisive) {
        return Ok(Value::Bool(decisive));
    }
    let r = right()?;
    if r == Some(decisive) {
        return Ok(Value::Bool(decisive));
    }
    Ok(if l.is_none() || r.is_none() {
        Value::Null
    } else {
        Value::Bool(!decisive)
    })
}

/// `doCreateEqual`: null equals null; null on the left alone is unknown, on the right alone
/// false.
fn equal<'a>(left: Value<'_>, right: Value<'_>) -> Eval<'a> {
    Ok(match (left, right) {
        (Value::Null, Value::Null) => Value::Bool(true),
        (Value::Null, _) => Value::Null,
        (_, Value::Null) => Value::Bool(false),
        _ => Value::Bool(compare(left, right)?.is_eq()),
    })
}

/// An ordering comparison of an evaluated left side: unknown if either side is null (the
/// right is not evaluated when the left is).
fn ordered<'a>(
    op: OrderOp,
    left: Value<'_>,
    right: impl FnOnce() -> Eval<'a>,
) -> Result<Option<bool>, EvalError> {
    if left == Value::Null {
        return Ok(None);
    }
    let right = right()?;
    if right == Value::Null {
        return Ok(None);
    }
    Ok(Some(op.holds(order(left, right)?)))
}

fn between<'a>(
    value: Value<'a>,
    low: &'a Expr,
    high: &'a Expr,
    negated: bool,
    props: &'a dyn Properties,
) -> Eval<'a> {
    if negated {
        or(
            || ordered(OrderOp::Lt, value, || low.evaluate(props)),
            || ordered(OrderOp::Gt, value, || high.evaluate(props)),
        )
    } else {
        and(
            || ordered(OrderOp::Ge, value, || low.evaluate(props)),
            || ordered(OrderOp::Le, value, || high.evaluate(props)),
        )
    }
}

/// CONTAINS / STARTSWITH / ENDSWITH and their NOT forms: false (never unknown) for an empty
/// search, a null or a non-string operand.
fn text_matches(
    op: TextOp,
    negated: bool,
    operand: &Expr,
    search: &str,
    props: &dyn Properties,
) -> Result<bool, EvalError> {
    if search.is_empty() {
        return Ok(false);
    }
    let Value::Str(text) = operand.evaluate(props)? else {
        return Ok(false);
    };
    let found = match op {
        TextOp::Contains => text.contains(search),
        TextOp::StartsWith => text.starts_with(search),
        TextOp::EndsWith => text.ends_with(search),
    };
    Ok(found ^ negated)
}
