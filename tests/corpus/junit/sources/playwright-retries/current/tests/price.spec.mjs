// A flaky test, a test.fail() test, a regression (fails on both tries) and a stable test.
import { test, expect } from "@playwright/test";

test("reads the price list", ({}, testInfo) => {
  expect(testInfo.retry >= 1).toBe(true);
});

test("rounds half to even", () => {
  test.fail();  // known bug: expected to fail
  expect(Math.round(2.5)).toBe(3);
});

test("formats cents", () => {
  expect((3).toFixed(1)).toBe("3.00");
});

test("adds tax", () => {
  expect(100 * 1.5).toBe(150);
});
