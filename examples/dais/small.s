.dais 1
.inputs 2 shifts 0 0
.outputs 2
%0 = input 0 : (1,3,0)
%1 = input 1 : (1,3,0)
%2 = sub %0, %1, 0 : (1,4,0)
%3 = add %2, %1, 2 : (1,5,0)
out 0 = %3
out 1 = -%2
