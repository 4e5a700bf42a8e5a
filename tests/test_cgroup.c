#include <check.h>
#include "testutil.h"
int main(void){return 0;}
