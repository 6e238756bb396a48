*** Comments ***
Run once, then again with --rerunfailed; rebot --merge writes the merged result as xunit.
"Reads Cache" fails on its first try and passes when rerun (a marker file in the output folder).

*** Settings ***
Library    OperatingSystem

*** Test Cases ***
Reads Cache
    Touch    ${OUTPUT DIR}/cache.ready
    Should Be Equal As Integers    1    1

Parses Order
    Should Be Equal    ${{ "42".strip() }}    42

Formats Price
    Should Be Equal    ${{ "%.2f" % 3 }}    3.00
