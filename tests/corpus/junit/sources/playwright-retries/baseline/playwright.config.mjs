// One project, one retry: a test that fails on its first try passes on the retry (flaky).
import { defineConfig } from "@playwright/test";

export default defineConfig({
  testDir: "./tests",
  retries: 1,
  reporter: [["junit", { outputFile: "SIDE.xml" }], ["json", { outputFile: "SIDE.json" }], ["list"]],
  projects: [{ name: "unit" }],
});
