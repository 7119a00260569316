//! The `EMIT` clause: when a query's group windows send results before the watermark
//! passes their end, and after it, written after the query as Blink and Calcite's streaming
//! SQL write it:
//!
//! ```sql
//! SELECT page, COUNT(*) AS views FROM clicks GROUP BY page, TUMBLE(at, INTERVAL '1' HOUR)
//! EMIT WITH DELAY '1' MINUTE BEFORE WATERMARK, WITHOUT DELAY AFTER WATERMARK
//! ```
//!
//! | clause | trigger |
//! |---|---|
//! | `WITH DELAY '1' MINUTE BEFORE WATERMARK` | an early result a minute (of processing time) after a window's first row since its last result |
//! | `WITHOUT DELAY BEFORE WATERMARK` | an early result after every row |
//! | `WITH DELAY '1' MINUTE AFTER WATERMARK` | a late result a minute after a window's first late row since its last result |
//! | `WITHOUT DELAY AFTER WATERMARK` | a late result after every late row |
//!
//! and the on-time result when the watermark passes the window's end, as without the
//! clause. Late results need the windows kept past their end: the streamlet's
//! `allowed-lateness` says how long (Blink's `table.exec.emit.allow-lateness`). Kept
//! windows without an `AFTER WATERMARK` strategy send a late result after every late row. Each result
//! after a window's first replaces the one before: the query's results update
//! ([`RowKind`](crate::RowKind)), the earlier result taken back (`-U`) before the new one
//! (`+U`).
//!
//! sqlparser does not know the clause, so it is cut off the query's text before parsing.

use std::time::Duration;

use datafusion_sql::sqlparser::dialect::GenericDialect;
use datafusion_sql::sqlparser::parser::Parser;
use datafusion_sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};
use runnel_streamlet::window::{Accumulation, Trigger, WindowSpec};

use crate::group_window::interval_millis;
use crate::{Error, Position};

/// When a query's group windows send results besides the on-time one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Emit {
    /// Early results this long (of processing time) after a window's first row since its
    /// last result; zero for one after every row; `None` for none.
    pub(crate) early: Option<Duration>,
    /// Late results, as early ones are timed, for rows after the on-time result.
    pub(crate) late: Option<Duration>,
    /// Where the clause is, for errors about it.
    pub(crate) position: Position,
}

impl Emit {
    /// `spec` with these firings, its windows kept `allowed_lateness` past their end, each
    /// later result replacing the one before.
    pub(crate) fn apply(
        emit: Option<&Emit>,
        spec: WindowSpec,
        allowed_lateness: Duration,
    ) -> WindowSpec {
        let firing = |delay: Duration| {
            if delay.is_zero() {
                Trigger::element_count(1)
            } else {
                Trigger::after_processing_time(delay)
            }
        };
        let mut trigger = Trigger::watermark();
        if let Some(early) = emit.and_then(|emit| emit.early) {
            trigger = trigger.early(firing(early));
        }
        // Kept windows update after each late row unless the clause says otherwise, as
        // Beam's default trigger does.
        let late = emit
            .and_then(|emit| emit.late)
            .or((!allowed_lateness.is_zero()).then_some(Duration::ZERO));
        if let Some(late) = late {
            trigger = trigger.late(firing(late));
        }
        spec.trigger(trigger)
            .allowed_lateness(allowed_lateness)
            .accumulation(Accumulation::AccumulatingAndRetracting)
    }
}

/// `sql` without its `EMIT` clause, and the clause, if it has one.
pub(crate) fn split_emit(sql: &str) -> Result<(&str, Option<Emit>), Error> {
    // A query that does not tokenize has no clause to find: the parser reports it.
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize_with_location() else {
        return Ok((sql, None));
    };
    let significant = |from: usize| {
        tokens[from..]
            .iter()
            .find(|token| !matches!(token.token, Token::Whitespace(_)))
            .map(|token| &token.token)
    };
    let is_word = |token: Option<&Token>, words: &[&str]| {
        matches!(token, Some(Token::Word(word))
            if word.quote_style.is_none()
                && words.iter().any(|name| word.value.eq_ignore_ascii_case(name)))
    };
    let mut depth = 0_i32;
    let mut found = None;
    let mut previous: Option<&Token> = None;
    for (at, token) in tokens.iter().enumerate() {
        match &token.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Word(word)
                if depth == 0
                    && word.quote_style.is_none()
                    && word.value.eq_ignore_ascii_case("emit") =>
            {
                // The clause, not a column called emit: a strategy follows, or nothing
                // after a query that could end there.
                let next = significant(at + 1);
                let ends = matches!(next, None | Some(Token::EOF | Token::SemiColon))
                    && matches!(
                        previous,
                        Some(Token::Word(_) | Token::RParen | Token::Number(..))
                    )
                    && !is_word(
                        previous,
                        &["select", "as", "by", "where", "on", "and", "or"],
                    );
                if is_word(next, &["with", "without"]) || ends {
                    found = Some(at);
                    break;
                }
            }
            _ => {}
        }
        if !matches!(token.token, Token::Whitespace(_)) {
            previous = Some(&token.token);
        }
    }
    let Some(at) = found else {
        return Ok((sql, None));
    };
    let position = position_of(&tokens[at]);
    let cut = position.offset_in(sql);
    let clause: Vec<&TokenWithSpan> = tokens[at + 1..]
        .iter()
        .filter(|token| !matches!(token.token, Token::Whitespace(_) | Token::EOF))
        .collect();
    let emit = parse_clause(&clause, position)?;
    Ok((&sql[..cut], Some(emit)))
}

/// The strategies after `EMIT`, separated by commas.
fn parse_clause(tokens: &[&TokenWithSpan], at: Position) -> Result<Emit, Error> {
    let mut emit = Emit {
        early: None,
        late: None,
        position: at,
    };
    let strategies: Vec<&[&TokenWithSpan]> = tokens
        .split(|token| matches!(token.token, Token::Comma | Token::SemiColon))
        .filter(|strategy| !strategy.is_empty())
        .collect();
    if strategies.is_empty() {
        return Err(clause_error(
            "EMIT without a strategy: write EMIT WITH DELAY '1' MINUTE BEFORE WATERMARK, EMIT \
             WITHOUT DELAY AFTER WATERMARK, or both separated by a comma",
            at,
        ));
    }
    for strategy in strategies {
        let words: Vec<String> = strategy
            .iter()
            .map(|token| token.token.to_string())
            .collect();
        let start = position_of(strategy[0]);
        let upper: Vec<String> = words.iter().map(|word| word.to_ascii_uppercase()).collect();
        let Some(when) = upper.len().checked_sub(2).map(|at| &upper[at..]) else {
            return Err(clause_error(unknown_strategy(&words), start));
        };
        let delay = match upper.first().map(String::as_str) {
            Some("WITHOUT") if upper.len() == 4 && upper[1] == "DELAY" => Duration::ZERO,
            Some("WITH") if upper.len() > 4 && upper[1] == "DELAY" => {
                delay(&words[2..words.len() - 2], position_of(strategy[2]))?
            }
            _ => return Err(clause_error(unknown_strategy(&words), start)),
        };
        let (slot, which) = match (when[0].as_str(), when[1].as_str()) {
            ("BEFORE", "WATERMARK") => (&mut emit.early, "before"),
            ("AFTER", "WATERMARK") => (&mut emit.late, "after"),
            _ => return Err(clause_error(unknown_strategy(&words), start)),
        };
        if slot.replace(delay).is_some() {
            return Err(clause_error(
                format!("EMIT names two strategies {which} the watermark: keep one"),
                start,
            ));
        }
    }
    Ok(emit)
}

/// The delay written after `WITH DELAY`: `'1' MINUTE` (as Blink writes it) or `INTERVAL
/// '1' MINUTE`.
fn delay(words: &[String], at: Position) -> Result<Duration, Error> {
    let written = words.join(" ");
    let text = if written.to_ascii_uppercase().starts_with("INTERVAL") {
        written.clone()
    } else {
        format!("INTERVAL {written}")
    };
    let millis = Parser::new(&GenericDialect {})
        .try_with_sql(&text)
        .and_then(|mut parser| parser.parse_expr())
        .map_err(|error| error.to_string())
        .and_then(|expression| interval_millis(&expression));
    match millis {
        Ok(millis) => Ok(Duration::from_millis(millis)),
        Err(_) => Err(clause_error(
            format!(
                "the delay of EMIT: expected an interval, as '1' MINUTE or '30' SECOND, found {written}"
            ),
            at,
        )),
    }
}

fn unknown_strategy(words: &[String]) -> String {
    format!(
        "EMIT {}: expected WITH DELAY '<n>' <unit> or WITHOUT DELAY, then BEFORE WATERMARK \
         or AFTER WATERMARK",
        words.join(" ")
    )
}

fn clause_error(message: impl Into<String>, at: Position) -> Error {
    Error::Plan {
        message: message.into(),
        position: Some(at),
    }
}

fn position_of(token: &TokenWithSpan) -> Position {
    Position {
        line: token.span.start.line,
        column: token.span.start.column,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clause_is_cut_off_the_query_and_read() {
        let sql = "SELECT 'EMIT' AS emit_word, COUNT(*) AS n FROM t\n\
                   GROUP BY TUMBLE(at, INTERVAL '1' HOUR)\n  emit with delay '1' MINUTE before watermark";
        let (query, emit) = split_emit(sql).unwrap();
        assert_eq!(
            query,
            "SELECT 'EMIT' AS emit_word, COUNT(*) AS n FROM t\nGROUP BY TUMBLE(at, INTERVAL '1' HOUR)\n  "
        );
        let emit = emit.unwrap();
        assert_eq!(emit.early, Some(Duration::from_secs(60)));
        assert_eq!(emit.late, None);
        assert_eq!(emit.position.to_string(), "3:3");

        let (_, emit) = split_emit("SELECT a FROM t EMIT WITHOUT DELAY BEFORE WATERMARK").unwrap();
        assert_eq!(emit.unwrap().early, Some(Duration::ZERO));
        let (_, emit) = split_emit(
            "SELECT a FROM t EMIT WITH DELAY '1' MINUTE BEFORE WATERMARK, WITHOUT DELAY AFTER WATERMARK",
        )
        .unwrap();
        let emit = emit.unwrap();
        assert_eq!(
            (emit.early, emit.late),
            (Some(Duration::from_secs(60)), Some(Duration::ZERO))
        );
        let (_, emit) =
            split_emit("SELECT a FROM t EMIT WITH DELAY '10' SECOND AFTER WATERMARK").unwrap();
        let emit = emit.unwrap();
        assert_eq!(
            (emit.early, emit.late),
            (None, Some(Duration::from_secs(10)))
        );
        let (_, emit) =
            split_emit("SELECT a FROM t EMIT WITH DELAY INTERVAL '30' SECOND BEFORE WATERMARK")
                .unwrap();
        assert_eq!(emit.unwrap().early, Some(Duration::from_secs(30)));
        for column in [
            "SELECT emit FROM t",
            "SELECT a, emit FROM t",
            "SELECT a FROM t WHERE b = emit",
        ] {
            assert_eq!(split_emit(column).unwrap(), (column, None));
        }
    }

    #[test]
    fn clauses_that_do_not_run_are_named_where_they_are() {
        for (sql, message, position) in [
            (
                "SELECT a FROM t EMIT WITHOUT DELAY AFTER WATERMARK, WITH DELAY '1' SECOND AFTER WATERMARK",
                "EMIT names two strategies after the watermark: keep one",
                "1:53",
            ),
            (
                "SELECT a FROM t EMIT WITHOUT DELAY AT WATERMARK",
                "EMIT WITHOUT DELAY AT WATERMARK: expected WITH DELAY",
                "1:22",
            ),
            (
                "SELECT a FROM t EMIT WITH DELAY 'soon' BEFORE WATERMARK",
                "the delay of EMIT: expected an interval, as '1' MINUTE or '30' SECOND, found 'soon'",
                "1:33",
            ),
            (
                "SELECT a FROM t EMIT WITH ROW BEFORE WATERMARK",
                "EMIT WITH ROW BEFORE WATERMARK: expected WITH DELAY",
                "1:22",
            ),
            ("SELECT a FROM t EMIT", "EMIT without a strategy", "1:17"),
        ] {
            let error = split_emit(sql).expect_err(sql);
            assert!(error.to_string().starts_with(message), "{sql}: {error}");
            assert_eq!(
                error.position().map(|p| p.to_string()).as_deref(),
                Some(position),
                "{sql}"
            );
        }
    }
}
