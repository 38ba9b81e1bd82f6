cat > compile_fortran.f95 << EOF
! Test Program
program first
print *,'This is my first program'
end program first
EOF

$FC -c -o compile_fortran.o compile_fortran.f95
