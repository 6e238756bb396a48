*** Comments ***
Two tests share the name "Total Is Six" in one suite: Robot runs both and warns.

*** Test Cases ***
Total Is Six
    ${total}=    Evaluate    sum(set([1, 2, 3]))
    Should Be Equal As Integers    ${total}    6

Total Is Six
    ${total}=    Evaluate    sum(set([2, 2, 2]))
    Should Be Equal As Integers    ${total}    6

Count Is Three
    ${count}=    Evaluate    len([1, 2, 3])
    Should Be Equal As Integers    ${count}    3
