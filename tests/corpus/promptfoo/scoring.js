// A promptfoo `assertScoringFunction` for the corpus: the test passes when its `quality` metric
// (the weighted mean of the assertions that name it) reaches 0.8, whatever those assertions say.
"use strict";

module.exports.strict = (namedScores) => {
  const quality = namedScores.quality ?? 0;
  return { pass: quality >= 0.8, score: quality, reason: `quality ${quality} (needs 0.8)` };
};
