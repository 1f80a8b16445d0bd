//! The selector's semantics, case by case as Apache RocketMQ evaluates them (the expected
//! values follow Apache's `filter` module; the Java matrix scenario `sql92` checks the same
//! kinds of cases against a real Apache broker).

use super::*;
use proptest::prelude::*;

/// A record's properties string from pairs.
fn props(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}\u{1}{v}\u{2}"))
        .collect()
}

fn matches(expression: &str, pairs: &[(&str, &str)]) -> bool {
    Selector::compile(expression)
        .unwrap_or_else(|e| panic!("{expression}: {e}"))
        .matches(&props(pairs))
}

fn refused(expression: &str) -> CompileError {
    Selector::compile(expression).expect_err(expression)
}

#[test]
fn compares_properties_with_numbers_as_java_converts_them() {
    let p = [
        ("a", "10"),
        ("d", "2.5"),
        ("big", "3000000000"),
        ("s", "abc"),
    ];
    assert!(matches("a > 5", &p));
    assert!(matches("a = 10", &p));
    assert!(matches("a >= 10 AND a <= 10", &p));
    assert!(!matches("a < 5", &p));
    assert!(
        !matches("d > 2", &p),
        "2.5 is no int: Integer.valueOf fails"
    );
    assert!(matches("d > 2.0", &p));
    assert!(matches("d = 2.5", &p));
    // An int literal makes the property an int: 3000000000 does not fit.
    assert!(!matches("big > 5", &p));
    assert!(
        matches("big > 2147483648", &p),
        "a long literal parses it as a long"
    );
    assert!(matches("big > 5.0", &p));
    assert!(matches("a = 10.0", &p), "10 as a double");
    assert!(matches("a > -1", &p));
    assert!(matches("a BETWEEN 1 AND 10", &p));
    assert!(!matches("a NOT BETWEEN 1 AND 10", &p));
    assert!(matches("a NOT BETWEEN 11 AND 20", &p));
}

#[test]
fn a_type_mismatch_fails_the_whole_selector_even_under_or() {
    let p = [("s", "abc"), ("t", "x")];
    assert!(!matches("s > 1", &p));
    assert!(!matches("s = 1", &p));
    // Apache's evaluation throws out of the OR: the right side never saves it.
    assert!(!matches("s > 1 OR t = 'x'", &p));
    // ... unless the left side already decided it.
    assert!(matches("t = 'x' OR s > 1", &p));
}

#[test]
fn a_missing_property_is_null_and_never_matches_a_comparison() {
    let p = [("a", "1")];
    assert!(!matches("missing > 1", &p));
    assert!(!matches("missing = 'x'", &p));
    assert!(!matches("missing <> 'x'", &p), "NOT of unknown is unknown");
    assert!(!matches("NOT (missing > 1)", &p));
    assert!(!matches("missing IN ('x')", &p));
    assert!(!matches("missing NOT IN ('x')", &p));
    assert!(!matches("missing BETWEEN 1 AND 2", &p));
    assert!(matches("missing IS NULL", &p));
    assert!(!matches("missing IS NOT NULL", &p));
    assert!(matches("a IS NOT NULL", &p));
    assert!(
        matches("missing > 1 OR a = 1", &p),
        "unknown OR true is true"
    );
    assert!(!matches("missing > 1 AND a = 1", &p));
    assert!(!matches("missing", &p));
    assert!(!matches("missing CONTAINS 'x'", &p));
    assert!(
        !matches("missing NOT CONTAINS 'x'", &p),
        "NOT CONTAINS of null is false"
    );
}

#[test]
fn strings_compare_equal_only_as_strings_and_order_only_as_doubles() {
    let p = [("s", "abc"), ("n", "7"), ("m", "10")];
    assert!(matches("s = 'abc'", &p));
    assert!(matches("s <> 'abd'", &p));
    assert!(!matches("n = '7.0'", &p));
    // Two properties are ordered as doubles: 7 < 10, not "7" > "10".
    assert!(matches("n < m", &p));
    assert!(!matches("s < m", &p), "abc is no double");
    assert!(matches("s IN ('x', 'abc')", &p));
    assert!(matches("s NOT IN ('x', 'y')", &p));
    assert!(matches("'abc' = s", &p));
    assert!(
        matches("7 = n", &p),
        "the property converted to the literal's type"
    );
}

#[test]
fn booleans_follow_java_valueof_and_properties_are_never_true_conditions() {
    let p = [("flag", "TRUE"), ("other", "yes")];
    assert!(matches("flag = TRUE", &p), "Boolean.valueOf ignores case");
    assert!(matches("other = FALSE", &p));
    assert!(
        !matches("flag", &p),
        "a property is a string, not a boolean"
    );
    assert!(matches("NOT flag", &p));
    assert!(
        !matches("TRUE = flag", &p),
        "Apache fails casting the boolean to a string"
    );
    assert!(matches("TRUE", &p));
    assert!(!matches("FALSE", &p));
    assert!(!matches("NULL", &p));
    assert!(matches("TRUE = TRUE", &p));
    assert!(!matches("5 = TRUE", &p), "unrelated types are unequal");
    assert!(matches("5 <> TRUE", &p));
}

#[test]
fn the_5x_string_operators() {
    let p = [("s", "hello world"), ("n", "12")];
    assert!(matches("s CONTAINS 'lo w'", &p));
    assert!(matches("s STARTSWITH 'hell'", &p));
    assert!(matches("s ENDSWITH 'world'", &p));
    assert!(matches("s NOT CONTAINS 'xyz'", &p));
    assert!(matches("s NOT STARTSWITH 'world'", &p));
    assert!(matches("s NOT ENDSWITH 'hello'", &p));
    assert!(!matches("s CONTAINS ''", &p), "an empty search is false");
    assert!(!matches("s NOT CONTAINS ''", &p));
    assert!(matches("n STARTSWITH '1'", &p));
    assert!(!matches("5 CONTAINS '5'", &p), "only strings contain");
    assert!(matches("TAGS STARTSWITH 'Tag'", &[("TAGS", "TagA")]));
}

#[test]
fn java_double_parsing_of_property_values() {
    for (text, expected) in [
        (" 2.5 ", true),
        ("2.5d", true),
        ("2.5F", true),
        ("25e-1", true),
        ("0x1.4p1", true),
        ("+2.5", true),
        ("2,5", false),
        ("inf", false),
        ("", false),
    ] {
        assert_eq!(matches("v = 2.5", &[("v", text)]), expected, "{text:?}");
    }
    assert!(matches("v > 1.0", &[("v", "Infinity")]));
    assert!(
        matches("v > 1.0", &[("v", "NaN")]),
        "NaN orders above everything in Java"
    );
    assert!(matches("v < -1.0", &[("v", "-Infinity")]));
    assert!(!matches("v > 1", &[("v", "+")]));
    assert!(matches("v = -5", &[("v", "-5")]));
}

#[test]
fn literals_as_apache_reads_them() {
    let p = [("a", "10")];
    assert!(matches("a = 10L", &p));
    assert!(matches("a = 1e1", &p));
    assert!(matches("a = .1E2", &p));
    assert!(matches("a = 10.", &p));
    assert!(matches("'it''s' = x", &[("x", "it's")]));
    assert!(matches("a = 10 -- a comment\n", &p));
    assert!(matches("/* c */ a /**/ = 10", &p));
    assert!(
        matches("A = 10 or a = 10", &[("a", "10")]),
        "keywords without case, names with"
    );
    assert!(!matches("A = 10", &p));
    assert!(
        matches("a = 10 )", &p),
        "Apache ignores what follows a complete expression"
    );
    assert!(matches("a = 10 b", &p));
}

#[test]
fn not_binds_tighter_than_a_comparison() {
    // `NOT a = 1` is `(NOT a) = 1`: a boolean compared with an int, never equal.
    assert!(!matches("NOT a = 1", &[("a", "2")]));
    assert!(matches("NOT (a = 1)", &[("a", "2")]));
    assert_eq!(refused("NOT a > 1"), CompileError::NotOrderable);
}

#[test]
fn refuses_what_apache_refuses() {
    assert_eq!(refused("a = NULL"), CompileError::NullComparison);
    assert_eq!(refused("TRUE = 1"), CompileError::BooleanComparison);
    assert_eq!(refused("a > 'x'"), CompileError::NotOrderable);
    assert_eq!(refused("a > TRUE"), CompileError::NotOrderable);
    assert_eq!(refused("a BETWEEN 5 AND 1"), CompileError::BetweenBounds);
    assert_eq!(refused("a BETWEEN NULL AND 1"), CompileError::BetweenBounds);
    assert_eq!(refused("'x' IN ('x')"), CompileError::InNeedsProperty);
    assert_eq!(
        refused("a = 0.0"),
        CompileError::NumberOutOfRange("0.0".into())
    );
    assert!(matches!(
        refused("a = 99999999999999999999"),
        CompileError::NumberOutOfRange(_)
    ));
    assert_eq!(refused("5"), CompileError::NotACondition);
    assert_eq!(refused("'x' OR a"), CompileError::NotACondition);
    assert!(matches!(refused(""), CompileError::Syntax { .. }));
    assert!(matches!(refused("a = "), CompileError::Syntax { .. }));
    assert!(matches!(refused("a = 1 AND"), CompileError::Syntax { .. }));
    assert!(matches!(
        refused("a = 1 NOT b"),
        CompileError::Syntax { .. }
    ));
    assert!(matches!(refused("a IN ()"), CompileError::Syntax { .. }));
    assert!(matches!(refused("a IN (1)"), CompileError::Syntax { .. }));
    assert!(matches!(refused("a IS 5"), CompileError::Syntax { .. }));
    assert!(matches!(refused("a != 1"), CompileError::Lexical { .. }));
    assert!(matches!(refused("a = 'open"), CompileError::Lexical { .. }));
    // No LIKE: Apache compiles the bare `a` and ignores the rest.
    assert!(!matches("a LIKE 'x'", &[("a", "x")]));
    // A `--` the text ends in is no comment but two minus signs, ignored as trailing text.
    assert!(matches("a = 1 --", &[("a", "1")]));
}

#[test]
fn hostile_sizes_are_typed_errors() {
    let long = format!("a = '{}'", "x".repeat(EXPRESSION_BYTES_MAX));
    assert!(matches!(refused(&long), CompileError::TooLong { .. }));
    let nested = format!("{}a = 1{}", "(".repeat(1000), ")".repeat(1000));
    assert!(matches!(refused(&nested), CompileError::TooDeep { .. }));
    let nots = format!("{}a", "NOT ".repeat(1000));
    assert!(matches!(refused(&nots), CompileError::TooDeep { .. }));
    let chain = vec!["a = 1"; 1000].join(" AND ");
    assert!(matches!(refused(&chain), CompileError::TooDeep { .. }));
    let list: Vec<String> = (0..=IN_LIST_MAX).map(|i| format!("'{i}'")).collect();
    let in_list = format!("a IN ({})", list.join(","));
    assert!(matches!(
        refused(&in_list),
        CompileError::InListTooLong { .. }
    ));
    let ok = vec!["a = 1"; 200].join(" AND ");
    assert!(matches(&ok, &[("a", "1")]));
}

#[test]
fn the_last_of_repeated_properties_counts() {
    let raw = "a\u{1}1\u{2}a\u{1}2\u{2}";
    assert!(Selector::compile("a = 2").unwrap().matches(raw));
}

proptest! {
    /// Arbitrary text compiles to a selector or a typed error, and a selector evaluates
    /// without panicking.
    #[test]
    fn any_text_compiles_or_fails_cleanly(text in "\\PC{0,200}") {
        if let Ok(selector) = Selector::compile(&text) {
            selector.matches(&props(&[("a", "1"), ("b", "x")]));
        }
    }

    /// Text made of the grammar's own tokens, which reaches far deeper into the parser.
    #[test]
    fn token_soup_compiles_or_fails_cleanly(
        tokens in proptest::collection::vec(prop_oneof![
            Just("a"), Just("b"), Just("TAGS"), Just("NOT"), Just("AND"), Just("OR"),
            Just("BETWEEN"), Just("IN"), Just("IS"), Just("NULL"), Just("TRUE"), Just("FALSE"),
            Just("CONTAINS"), Just("STARTSWITH"), Just("ENDSWITH"), Just("="), Just("<>"),
            Just(">"), Just(">="), Just("<"), Just("<="), Just("("), Just(")"), Just(","),
            Just("+"), Just("-"), Just("1"), Just("2.5"), Just("'x'"), Just("'1'"), Just("0"),
        ], 0..40),
        a in "[-0-9.eExNaIfinty ]{0,6}",
    ) {
        let text = tokens.join(" ");
        if let Ok(selector) = Selector::compile(&text) {
            selector.matches(&props(&[("a", &a), ("b", "x"), ("TAGS", "x")]));
        }
    }
}
