OziExplorer Track Point File Version 2.1
WGS 84
Altitude is in Feet
Reserved 3
0,2,255,Track,0,0,2,8421376
2
  45.0,  7.0,1,100,39744.12,23-Oct-08,02:53:04
  45.1,  7.1,0,-777,39744.13,23-Oct-08,02:53:10
