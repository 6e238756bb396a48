//! A second integration test binary: its `checks::works` regresses in the current side.

mod checks {
    #[test]
    fn works() {
        assert_eq!(ledger::balance(&[5, -2]), 3);
    }
}
