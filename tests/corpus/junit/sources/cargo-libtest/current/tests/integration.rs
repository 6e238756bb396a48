//! The first integration test binary: its `checks::works` is fixed in the current side.

mod checks {
    #[test]
    fn works() {
        assert_eq!(ledger::fee(100), 10);
    }

    #[test]
    fn empty_balance_is_zero() {
        assert_eq!(ledger::balance(&[]), 0);
    }
}
