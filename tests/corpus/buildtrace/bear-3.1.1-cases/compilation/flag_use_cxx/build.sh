touch use_cxx_1.cc use_cxx_2.cc

$CXX -c -o use_cxx_1.o use_cxx_1.cc;
$CXX -c -o use_cxx_2.o use_cxx_2.cc;
