// Two projects run the same test file (no browser: the tests are pure logic).
import { defineConfig } from "@playwright/test";

export default defineConfig({
  testDir: "./tests",
  reporter: [["junit", { outputFile: "SIDE.xml" }], ["json", { outputFile: "SIDE.json" }], ["list"]],
  projects: [{ name: "api" }, { name: "unit" }],
});
