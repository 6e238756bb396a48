// The GoogleTest project of the corpus: one pair per shape, chosen at compile time
// (-DSAME_NAME, -DPARAM, -DDISABLED, -DDISABLED_SUITE, -DSKIP, -DREPEAT); Stable.Holds is
// in every pair.
#include <gtest/gtest.h>

static int Twice(int x) { return x == 1 ? 7 : x + x; }
static int Half(int x) { return (x + 1) / 2; }

#ifdef SAME_NAME
// (a) the same test name in two suites
TEST(SuiteA, Works) { EXPECT_EQ(Twice(2), 5); }
TEST(SuiteB, Works) { EXPECT_EQ(Half(9), 5); }
#endif

#ifdef PARAM
// (b) a value-parameterized test, with a new instantiation placed before the others
class Doubling : public ::testing::TestWithParam<int> {};
TEST_P(Doubling, IsEven) { EXPECT_EQ(Twice(GetParam()) % 2, 0); }
INSTANTIATE_TEST_SUITE_P(Early, Doubling, ::testing::Values(10));
INSTANTIATE_TEST_SUITE_P(Small, Doubling, ::testing::Values(1, 2, 3));
#endif

#ifdef DISABLED
// (c) a test that passes now and is disabled in the current side
TEST(Toggles, DISABLED_StillChecked) { EXPECT_EQ(Twice(0), 0); }
#endif

#ifdef DISABLED_SUITE
// (c2) a passing test whose whole suite is disabled in the current side (the test's own name
// stays; only the suite name changes)
TEST(DISABLED_Flags, StillOn) { EXPECT_EQ(Half(2), 1); }
#endif

#ifdef SKIP
// (d) a test that passes now and skips itself in the current side
TEST(Skips, RunsToday) { GTEST_SKIP() << "store offline"; EXPECT_EQ(Half(4), 2); }
#endif

#ifdef REPEAT
// (e) run with --gtest_repeat=2: the current side fails on the first iteration only
static int runs = 0;
TEST(Repeat, WarmsUp) { EXPECT_GT(++runs, 1); }
#endif

TEST(Stable, Holds) { EXPECT_EQ(Twice(5), 10); }
