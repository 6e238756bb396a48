*** Comments ***
Run once, then again with --rerunfailed; rebot --merge writes the merged result as xunit.
"Reads Cache" fails on its first try and passes when rerun (a marker file in the output folder).

*** Settings ***
Library    OperatingSystem

*** Test Cases ***
Reads Cache
    ${ready}=    Run Keyword And Return Status    File Should Exist    ${OUTPUT DIR}/cache.ready
    Touch    ${OUTPUT DIR}/cache.ready
    Should Be True    ${ready}    cache not ready on the first try

Parses Order
    Should Be Equal    ${{ "4x".strip() }}    42

Formats Price
    Should Be Equal    ${{ "%.2f" % 3 }}    3.00
