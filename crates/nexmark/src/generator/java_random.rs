//! [`JavaRandom`]: the linear congruential generator of `java.util.Random`, so that events
//! drawn from a seed are the ones the reference (Java) generator draws from it.

/// The multiplier of `java.util.Random`'s 48-bit linear congruential generator.
const MULTIPLIER: i64 = 0x5_DEEC_E66D;
/// Its increment.
const ADDEND: i64 = 0xB;
/// Its modulus, 2^48, as a mask.
const MASK: i64 = (1 << 48) - 1;

/// A pseudo-random sequence with the semantics of `java.util.Random` (Knuth's 48-bit linear
/// congruential generator, as the Java SE documentation specifies it): the same seed gives
/// the same `next_int`, `next_long` and `next_double` values as in Java.
///
/// ```
/// use runnel_nexmark::generator::JavaRandom;
/// let mut random = JavaRandom::new(42);
/// assert_eq!(random.next_int(), -1_170_105_035); // new java.util.Random(42).nextInt()
/// ```
#[derive(Debug, Clone)]
pub struct JavaRandom {
    seed: i64,
}

impl JavaRandom {
    /// A sequence seeded with `seed`, as `new java.util.Random(seed)`.
    pub fn new(seed: i64) -> Self {
        JavaRandom {
            seed: (seed ^ MULTIPLIER) & MASK,
        }
    }

    /// The next `bits` random bits, as Java's protected `next(bits)`: a signed 32-bit value.
    fn next(&mut self, bits: u32) -> i32 {
        self.seed = (self.seed.wrapping_mul(MULTIPLIER).wrapping_add(ADDEND)) & MASK;
        (self.seed >> (48 - bits)) as i32
    }

    /// A uniformly distributed `i32` (`nextInt()`).
    pub fn next_int(&mut self) -> i32 {
        self.next(32)
    }

    /// A uniformly distributed value in `[0, bound)` (`nextInt(bound)`).
    ///
    /// # Panics
    ///
    /// If `bound` is not positive, as Java throws.
    pub fn next_int_below(&mut self, bound: i32) -> i32 {
        assert!(
            bound > 0,
            "the bound of next_int_below must be positive, was {bound}"
        );
        if bound & -bound == bound {
            // A power of two: the high bits are the better ones.
            return ((i64::from(bound) * i64::from(self.next(31))) >> 31) as i32;
        }
        loop {
            let bits = self.next(31);
            let value = bits % bound;
            // Reject the top values that would make the result uneven (Java's int overflow).
            if bits.wrapping_sub(value).wrapping_add(bound - 1) >= 0 {
                return value;
            }
        }
    }

    /// A uniformly distributed `i64` (`nextLong()`).
    pub fn next_long(&mut self) -> i64 {
        (i64::from(self.next(32)) << 32).wrapping_add(i64::from(self.next(32)))
    }

    /// A uniformly distributed value in `[0, 1)` (`nextDouble()`).
    pub fn next_double(&mut self) -> f64 {
        let high = i64::from(self.next(26)) << 27;
        let low = i64::from(self.next(27));
        (high + low) as f64 * (1.0 / (1_i64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by `jshell` (OpenJDK 17) for the same calls on `new Random(seed)`.
    #[test]
    fn the_sequences_are_java_util_randoms() {
        let mut random = JavaRandom::new(42);
        let ints: Vec<i32> = (0..3).map(|_| random.next_int()).collect();
        assert_eq!(ints, JAVA_INTS_42);
        let mut random = JavaRandom::new(7);
        let bounded: Vec<i32> = (0..6).map(|_| random.next_int_below(13)).collect();
        assert_eq!(bounded, JAVA_BELOW_13_SEED_7);
        let mut random = JavaRandom::new(1_000);
        let powers: Vec<i32> = (0..4).map(|_| random.next_int_below(16)).collect();
        assert_eq!(powers, JAVA_BELOW_16_SEED_1000);
        let mut random = JavaRandom::new(123_456_789);
        assert_eq!(random.next_long(), JAVA_LONG_123456789);
        assert_eq!(random.next_double().to_bits(), JAVA_DOUBLE_AFTER.to_bits());
    }

    const JAVA_INTS_42: [i32; 3] = [-1_170_105_035, 234_785_527, -1_360_544_799];
    const JAVA_BELOW_13_SEED_7: [i32; 6] = [3, 12, 3, 10, 8, 0];
    const JAVA_BELOW_16_SEED_1000: [i32; 4] = [11, 3, 9, 7];
    const JAVA_LONG_123456789: i64 = -6_197_403_153_606_331_135;
    const JAVA_DOUBLE_AFTER: f64 = 0.456_951_785_905_206_46;
}
