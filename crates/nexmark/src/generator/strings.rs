//! Random strings, padding and prices, drawn as the reference generator draws them
//! (Beam's `StringsGenerator`, `PriceGenerator` and `LongGenerator`).

use super::JavaRandom;

/// The shortest random string.
const MIN_STRING_LENGTH: i32 = 3;

/// A string of 3 to `max_length - 1` characters, lower-case letters with one in 13 a space,
/// trimmed.
pub(crate) fn next_string(random: &mut JavaRandom, max_length: i32) -> String {
    let length = MIN_STRING_LENGTH + random.next_int_below(max_length - MIN_STRING_LENGTH);
    let mut text = String::with_capacity(length as usize);
    for _ in 0..length {
        if random.next_int_below(13) == 0 {
            text.push(' ');
        } else {
            text.push(char::from(b'a' + random.next_int_below(26) as u8));
        }
    }
    text.trim_matches(' ').to_owned()
}

/// A string of exactly `length` characters, six from each random `i32`. As in the
/// reference, a negative draw gives characters below `a` (from `H` to `` ` ``).
pub(crate) fn next_exact_string(random: &mut JavaRandom, length: i32) -> String {
    let mut text = String::with_capacity(length.max(0) as usize);
    let (mut draw, mut left) = (0_i32, 0);
    for _ in 0..length {
        if left == 0 {
            draw = random.next_int();
            left = 6;
        }
        text.push(char::from((i32::from(b'a') + draw % 26) as u8));
        draw /= 26;
        left -= 1;
    }
    text
}

/// Padding that brings a record of `current_size` bytes to `average_size` on average
/// (uniform within 20% of the difference); empty when the record is already larger.
pub(crate) fn next_extra(random: &mut JavaRandom, current_size: i64, average_size: i64) -> String {
    if current_size > average_size {
        return String::new();
    }
    let wanted = (average_size - current_size) as i32;
    let delta = (f64::from(wanted) * 0.2).round() as i32;
    let size = wanted - delta
        + if delta == 0 {
            0
        } else {
            random.next_int_below(2 * delta)
        };
    next_exact_string(random, size)
}

/// A price in cents, log-uniform from $1 to $1,000,000.
pub(crate) fn next_price(random: &mut JavaRandom) -> i64 {
    java_round(10_f64.powf(random.next_double() * 6.0) * 100.0)
}

/// A value in `[0, bound)`: `next_int_below` when the bound fits an `i32`, as the reference.
pub(crate) fn next_long_below(random: &mut JavaRandom, bound: i64) -> i64 {
    if bound < i64::from(i32::MAX) {
        i64::from(random.next_int_below(bound as i32))
    } else {
        (random.next_long() % bound).abs()
    }
}

/// Java's `Math.round`: the nearest integer, halves rounded up.
fn java_round(value: f64) -> i64 {
    (value + 0.5).floor() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_have_the_lengths_and_letters_the_reference_allows() {
        let mut random = JavaRandom::new(5);
        for _ in 0..200 {
            let text = next_string(&mut random, 20);
            assert!(text.len() <= 19, "{text:?}");
            assert!(!text.starts_with(' ') && !text.ends_with(' '), "{text:?}");
            assert!(
                text.chars().all(|c| c == ' ' || c.is_ascii_lowercase()),
                "{text:?}"
            );
        }
        let exact = next_exact_string(&mut random, 37);
        assert_eq!(exact.len(), 37);
        assert!(exact.bytes().all(|b| (b'a' - 25..=b'z').contains(&b)));
    }

    #[test]
    fn padding_averages_to_the_wanted_size() {
        let mut random = JavaRandom::new(11);
        let sizes: Vec<usize> = (0..2_000)
            .map(|_| next_extra(&mut random, 32, 100).len())
            .collect();
        assert!(sizes.iter().all(|size| (54..=81).contains(size)));
        let mean = sizes.iter().sum::<usize>() as f64 / sizes.len() as f64;
        assert!((mean - 67.5).abs() < 1.0, "mean padding {mean}");
        assert_eq!(next_extra(&mut random, 120, 100), "");
    }

    /// `Math.round(Math.pow(10.0, new Random(1).nextDouble() * 6.0) * 100.0)` in jshell.
    #[test]
    fn prices_are_the_references() {
        let mut random = JavaRandom::new(1);
        assert_eq!(next_price(&mut random), JAVA_PRICE_SEED_1);
        assert_eq!(java_round(2.5), 3);
        assert_eq!(java_round(-2.5), -2);
    }

    const JAVA_PRICE_SEED_1: i64 = 2_428_114;
}
