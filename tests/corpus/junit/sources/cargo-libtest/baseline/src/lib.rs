//! The code under test. `checks::works` is a test path in this crate's unit tests and in both
//! integration test binaries (tests/integration.rs, tests/payouts.rs).

pub fn balance(entries: &[i64]) -> i64 {
    entries.iter().sum()
}

pub fn fee(amount: i64) -> i64 {
    amount / 10
}

#[cfg(test)]
mod checks {
    use super::*;

    #[test]
    fn works() {
        assert_eq!(fee(19), 1);
    }

    #[test]
    fn balance_of_nothing() {
        assert_eq!(balance(&[]), 0);
    }
}
