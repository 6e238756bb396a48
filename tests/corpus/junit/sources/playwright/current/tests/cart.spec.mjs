// The same tests run once per project; the code under test reads the project name (baseline:
// broken for "unit"; current: broken for "api", fixed for "unit").
import { test, expect } from "@playwright/test";

function total(prices, project) {
  const sum = prices.reduce((acc, price) => acc + price, 0);
  return project === "api" ? sum + 1 : sum;
}

test.describe("cart", () => {
  test("totals the prices", ({}, testInfo) => {
    expect(total([1, 2, 3], testInfo.project.name)).toBe(6);
  });

  test("is empty at first", () => {
    expect(total([], "")).toBe(0);
  });
});
