build()
{
  mkdir -p append append/src
  touch append/src/source_1.c append/src/source_2.c
  $CC -c -o append/src/source_1.o append/src/source_1.c
  $CC -c -o append/src/source_2.o append/src/source_2.c
}

verify()
{
  mkdir -p append append/test
  touch append/test/source_1.c append/test/source_2.c
  $CC -c -o append/test/source_1.o append/test/source_1.c
  $CC -c -o append/test/source_2.o append/test/source_2.c
}

clean()
{
  rm -rf append
}

case $1 in
  -build)
    build
    ;;
  -test)
    verify
    ;;
  -clean)
    clean
    ;;
  *)
    # unknown option
    ;;
esac

true
