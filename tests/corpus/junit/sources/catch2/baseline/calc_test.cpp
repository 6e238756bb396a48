// The Catch2 project of the corpus: a regression, a fix, a [!mayfail] and a [!shouldfail]
// test, and a test case whose SECTIONs Catch2 runs one by one (one of them regresses).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <string>
#include <vector>

static int parse(const std::string& text) { return std::stoi(text); }

TEST_CASE("adds", "[calc]") { REQUIRE(2 + 2 == 4); }

TEST_CASE("parses", "[calc]") { REQUIRE(parse("42") == 42); }

TEST_CASE("formats", "[calc]") { REQUIRE(std::to_string(3).size() * 4 == 3); }

TEST_CASE("rounds", "[calc][!mayfail]") { REQUIRE(7 / 2 == 3); }

TEST_CASE("divides by zero", "[calc][!shouldfail]") { REQUIRE(1 / 1 == 2); }

TEST_CASE("stack", "[stack]") {
    std::vector<int> items{1, 2};
    SECTION("push") {
        items.push_back(3);
        REQUIRE(items.size() == 3);
    }
    SECTION("pop") {
        items.pop_back();
        REQUIRE(items.size() + 1 == 2);
    }
}
