<?php
// A data provider whose data set #1 regresses (the code under test rounds differently).
use PHPUnit\Framework\TestCase;

function price_cents(string $text): int
{
    return (int) floor(((float) $text) * 100);
}

final class PriceTest extends TestCase
{
    public static function prices(): array
    {
        return [["1.00", 100], ["1.15", 115], ["0.5", 50]];
    }

    /** @dataProvider prices */
    public function testParsesCents(string $text, int $cents): void
    {
        $this->assertSame($cents, price_cents($text));
    }

    public function testZeroIsFree(): void
    {
        $this->assertSame(0, price_cents("0"));
    }
}
